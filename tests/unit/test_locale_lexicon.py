"""A locale's words are its folder's (prompts/locales/<locale>/lexicon.json): a locale added as a
folder is understood, its language told by its own script, without a line of code; and no module of
app/ says a locale's words or names a locale itself (tests/locale_literals.py reads them)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from app import locales
from app.data.import_format import parse
from app.domain.knowledge import LibraryError, parse_library
from app.domain.understanding import language_of, understand
from app.errors import ImportRejected
from app.eval.keyfields import direction_findings, status_claims
from tests.locale_literals import offenders, template_words


@pytest.fixture
def greek(tmp_path: Path) -> Iterator[Path]:
    """The service's locales and an "el" folder beside them, with a few words of its own."""
    root = tmp_path / "locales"
    shutil.copytree(locales.DEFAULT_ROOT, root)
    (root / "el").mkdir()
    data = json.loads((root / "en" / "locale.json").read_text(encoding="utf-8"))
    data.update(name="Ελληνικά", language="el", canonical={})
    data.update(default=False, console=False, model=False)
    (root / "el" / "locale.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    signals = json.loads((root / "en" / "lexicon.json").read_text(encoding="utf-8"))["signals"]
    words = {
        "signals": [[intent, "λογαριασμ" if intent == "bill_change" else ""] for intent, _ in signals],
        "needs": {"cause": "γιατί"},
        "script": {"letters": "[α-ωάέήίόύώϊϋΐΰ]+", "weight": 2, "min_length": 2, "spaced": True},
    }
    (root / "el" / "lexicon.json").write_text(json.dumps(words, ensure_ascii=False), encoding="utf-8")
    checks = {"claims": {"unpaid": "απλήρωτ"}, "up": "αυξήθηκε", "bill": "λογαριασμ", "sentence_split": "[.;]"}
    (root / "el" / "keyfields.json").write_text(json.dumps(checks, ensure_ascii=False), encoding="utf-8")
    locales.use(root)
    try:
        yield root
    finally:
        locales.use(locales.DEFAULT_ROOT)


def test_a_locale_folder_with_its_own_lexicon_is_understood(greek: Path) -> None:
    reading = understand("Γιατί ανέβηκε ο λογαριασμός μου;", ())
    assert (reading.intent, reading.language, reading.needs, reading.certain) == ("bill_change", "el", ("cause",), True)
    # The locales that were there still read as they did.
    assert language_of("why is my bill higher") == "en"
    assert language_of("为什么账单多了") == "zh-CN"


def test_the_eval_reads_an_answer_in_a_locale_folder_by_its_own_words(greek: Path) -> None:
    assert status_claims("Ο λογαριασμός σας είναι απλήρωτος.") == {"unpaid"}
    assert direction_findings("Ο λογαριασμός σας αυξήθηκε κατά 12,00 EUR.", Decimal("-12.00")) == ["αυξήθηκε"]
    assert status_claims("Your bill is unpaid.") == {"unpaid"}  # the other locales' words as they were


def test_what_is_stored_with_a_locale_may_be_in_any_locale_with_a_folder(greek: Path) -> None:
    def customer(locale: str) -> str:
        return json.dumps({"tenant": "t", "customers": [{"ref": "C-1", "name": "Νίκος", "locale": locale}]})

    assert parse(customer("el")).customers[0].locale == "el"
    article = {"id": "late-fee", "locale": "el", "title": "Τέλος", "body": "Κείμενο."}
    assert parse_library(json.dumps({"articles": [article]}).encode())[0].locale == "el"
    with pytest.raises(ImportRejected, match=r"locale must be one of el, en, zh-CN - at `\$.customers\[0\].locale`"):
        parse(customer("fr"))
    with pytest.raises(LibraryError, match=r"article 1 \('late-fee'\): locale: must be one of el, en, zh-CN"):
        parse_library(json.dumps({"articles": [{**article, "locale": "fr"}]}).encode())


def test_without_the_folder_the_words_are_not_known() -> None:
    reading = understand("Γιατί ανέβηκε ο λογαριασμός μου;", ())
    assert (reading.intent, reading.language, reading.certain) == ("out_of_scope", None, False)


def test_a_language_is_told_by_the_locales_scripts(greek: Path) -> None:
    # Each script's units weighed (a word of a spaced script as two characters of an unspaced one).
    assert language_of("λογαριασμός bill") == "el"  # a tie of two spaced scripts: the first folder's
    assert language_of("λογαριασμός μου bill") == "el"
    assert language_of("账单 bill") == "zh-CN"  # a tie: the lighter units win
    assert language_of("ok 12.00 ?") is None


def test_no_module_says_a_locales_words_or_names_a_locale() -> None:
    assert offenders() == {}


def test_no_page_template_says_words_of_its_own() -> None:
    """The console's pages, the front page and the demo page say only their locale's words."""
    assert template_words() == {}


def test_a_template_that_says_words_of_its_own_is_found(tmp_path: Path) -> None:
    (tmp_path / "page.html").write_text(
        '{# a comment may #}<h1 class="x">{{ w.title }}</h1>\n<button aria-label="Close">×</button>\n'
        "<p>{% if q %}{{ fill(w.none, q=q) }}{% else %}Nothing found{% endif %}</p><script>let a = 1;</script>",
        encoding="utf-8",
    )
    (tmp_path / "quiet.html").write_text('<a href="/x" lang="{{ lang }}">{{ w.x }}</a> · #{{ n }}', encoding="utf-8")
    assert template_words(tmp_path) == {"page.html": ["Close", "Nothing", "found"]}


def test_a_module_that_says_a_locales_words_or_names_one_is_found(tmp_path: Path) -> None:
    (tmp_path / "quiet.py").write_text(
        '"""为什么账单多了, quoted: a docstring may."""\nLOCALE = locales.default()\n', encoding="utf-8"
    )
    (tmp_path / "words.py").write_text('PAID = "已还款"\n', encoding="utf-8")
    (tmp_path / "codes.py").write_text('LOCALE = "zh-CN" if True else "en-XA"\n')
    assert offenders(tmp_path) == {"words.py": {"words"}, "codes.py": {"codes"}}
