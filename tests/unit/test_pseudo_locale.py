"""The answers in en-XA, the generated pseudo-locale (tests/pseudo_locale.py): the golden set's
deterministic answers, every claim a model may plan, the conversation's notices and the statement
table's phrases pass through the locale, so none holds a plain English word but the data (a
merchant's name, a currency's code, the bank's name)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from app import locales
from app.answers.realize import Realizer
from app.domain.facts import BillFacts
from app.domain.intents import mentioned
from app.domain.understanding import understand
from app.eval import golden
from app.eval.run import demo_policy
from app.prompts import change, phrases, render_clarify, render_fallback, render_handover, render_notice, render_took
from tests.generated_facts import KNOWN, PLAN_INTENTS, accepted_alone, random_facts
from tests.pseudo_locale import PSEUDO, english_words, pseudo, pseudo_locales

POLICY = demo_policy()


@pytest.fixture(autouse=True)
def pseudo_locale(tmp_path: Path) -> Iterator[Path]:
    with pseudo_locales(tmp_path / "locales") as folder:
        yield folder


def data_of(facts: BillFacts) -> tuple[str, ...]:
    """What an answer may say as it is: third-party names, the currency's code, the bank's name."""
    return (
        *(e.label for e in facts.entries),
        *(d.label for d in facts.drivers if d.label),
        facts.currency,
        POLICY.brand,
    )


def test_the_pseudo_locale_registers_itself_from_its_folder() -> None:
    assert PSEUDO in locales.locales()
    assert locales.money(Decimal("-64.38"), "EUR", PSEUDO) == "-64.38 EUR"
    assert locales.closest(PSEUDO, "en") == PSEUDO  # an English question on an en-XA page
    assert locales.closest(PSEUDO, "zh-CN") == "zh-CN"
    # After a Chinese answer, an English question on the en-XA page is answered the page's way.
    assert locales.closest("zh-CN", "en", PSEUDO) == PSEUDO
    assert locales.closest("zh-CN", "en") == "en"  # without the page: English's first locale
    assert locales.closest("zh-CN", None, PSEUDO) == "zh-CN"  # a language not said: as the conversation


def test_a_question_the_widget_suggests_in_en_xa_reads_as_its_english_source() -> None:
    """en-XA's lexicon is en's, pseudo-localized (tests/pseudo_locale.py): a suggested question, a
    quick reply or a canonical question clicked in en-XA is what it is in English."""
    en, xa = locales.words("en")["widget"], locales.words(PSEUDO)["widget"]
    pairs = [
        *zip(en["suggested"] + en["followUps"], xa["suggested"] + xa["followUps"], strict=True),
        *((locales.data("en").canonical[i], q) for i, q in locales.data(PSEUDO).canonical.items()),
    ]
    for source, said in pairs:
        want, got = understand(source, ()), understand(said, ())
        assert (got.intent, got.needs, got.handover, got.language) == (
            want.intent,
            want.needs,
            want.handover,
            "en",
        ), said


def test_the_detector_finds_english_that_skipped_the_locale() -> None:
    assert english_words(pseudo("Your bill is higher") + " than last month") == ["than", "last", "month"]
    assert english_words("purchases at “City Gym”", allowed=("City Gym",)) == ["purchases", "at"]
    assert english_words(pseudo("Due on {due_date}: {amount}") + " 12.00 EUR", allowed=("EUR",)) == []


def test_every_golden_answer_passes_through_the_locale() -> None:
    leaks = {}
    for case in golden.load():
        focus = mentioned(case.question, {e.label for e in case.facts.entries})
        text = render_fallback(case.intent, case.facts, PSEUDO, policy=POLICY, focus=focus)
        if found := english_words(text, data_of(case.facts)):
            leaks[case.id] = (found, text)
    assert leaks == {}


def test_every_claim_a_model_may_plan_passes_through_the_locale() -> None:
    leaks = {}
    for seed in range(12):
        facts = random_facts(random.Random(seed))
        realizers = [Realizer(facts, PSEUDO), Realizer(facts, PSEUDO, chat=True)]
        for intent, realizer in ((i, r) for i in PLAN_INTENTS for r in realizers):
            for claim in accepted_alone(facts, intent):
                text, reason = realizer.say(claim, None)
                assert reason is None, (claim, reason)
                if found := english_words(text, (*data_of(facts), *KNOWN)):
                    leaks[f"{seed}:{claim}"] = (found, text)
    assert leaks == {}


def test_the_conversations_notices_and_the_statement_table_pass_through_the_locale() -> None:
    facts = random_facts(random.Random(3))
    said = [
        render_took("bill_change", [], PSEUDO),
        render_took("charge", ["City Gym"], PSEUDO),
        render_clarify(["City Gym", "Corner Cafe"], PSEUDO),
        *(render_handover(reason, PSEUDO, policy=POLICY) for reason in ("requested", "fallbacks", "out_of_scope")),
        render_notice("joined", PSEUDO, name=None),
        render_notice("back", PSEUDO),
        render_notice("not_saved", PSEUDO),
        change(Decimal("64.38"), "EUR", PSEUDO),
        change(Decimal("-64.38"), "EUR", PSEUDO),
        *phrases(facts.drivers, facts.payment.status, PSEUDO)[0],
        phrases([], facts.payment.status, PSEUDO)[1],
    ]
    allowed = ("City Gym", "Corner Cafe", "EUR", POLICY.brand, *data_of(facts))
    assert {text: english_words(text, allowed) for text in said} == {text: [] for text in said}
