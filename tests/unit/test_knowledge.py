"""The library's pure core: what a file may hold (errors name the article and the field), passages,
which search candidates may answer (never a near miss), when a question is the library's, the reasons
for a statement's fees, and the plan's passage claim under the schema and the check."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping

import msgspec
import pytest

from app.domain.claims import NoAnswer, PassageClaim
from app.domain.knowledge import (
    MIN_COVERAGE,
    Candidate,
    Found,
    LibraryError,
    Passage,
    Terms,
    parse_library,
    passages,
    quoted_digest,
    read_with_library,
    reasons,
)
from app.domain.plan import PlanCheck
from app.domain.plan_schema import plan_schema
from app.domain.understanding import understand
from tests.generated_facts import random_facts

GOOD = {"id": "late-fee", "locale": "en", "title": "Late fees", "body": "One.\n\nTwo.", "tags": ["Late payment fee"]}


def _raw(*articles: Mapping[str, object]) -> bytes:
    return json.dumps({"articles": list(articles)}).encode()


def _passage(article: str, version: int = 1, text: str = "text") -> Passage:
    return Passage(article=article, version=version, title=article.title(), n=1, text=text)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({**GOOD, "locale": "fr"}, "article 2 ('late-fee'): locale: must be one of en, zh-CN"),
        ({**GOOD, "id": "Late Fee"}, "article 2 ('Late Fee'): id:"),
        ({k: v for k, v in GOOD.items() if k != "title"}, "article 2 ('late-fee'): article: Object missing required"),
        ({**GOOD, "body": " \n\n "}, "article 2 ('late-fee', en): body: blank"),
        ({**GOOD, "body": "x" * 1201}, "article 2 ('late-fee', en): body: paragraph 1 has 1201 characters"),
        ({**GOOD, "extra": 1}, "article 2 ('late-fee'): article: Object contains unknown field `extra`"),
    ],
)
def test_a_bad_article_is_named_with_its_field(bad: dict[str, object], message: str) -> None:
    first = {**GOOD, "id": "first"}
    with pytest.raises(LibraryError) as error:
        parse_library(_raw(first, bad))
    assert str(error.value).startswith(message)


def test_the_same_article_twice_in_one_locale_is_refused_and_in_two_locales_is_not() -> None:
    with pytest.raises(LibraryError, match=r"article 2 \('late-fee', en\): id: a second article"):
        parse_library(_raw(GOOD, GOOD))
    assert [a.locale for a in parse_library(_raw(GOOD, {**GOOD, "locale": "zh-CN"}))] == ["en", "zh-CN"]


def test_passages_are_the_paragraphs_exactly_as_written() -> None:
    assert passages("  First line\nstill first.\n \nSecond: 2%.\n\n\n") == ["First line\nstill first.", "Second: 2%."]


def _found(*candidates: tuple[str, float, set[str]], frequency: dict[str, int], total: int = 30) -> Found:
    return Found(
        terms=Terms(total=total, frequency=frequency),
        candidates=[Candidate(passage=_passage(a), rank=r, terms=frozenset(t)) for a, r, t in candidates],
        tagged={},
    )


def test_a_candidate_that_lacks_the_questions_rare_word_is_a_near_miss_not_an_answer() -> None:
    # "savings" is rarer than "interest" and "rate", and the interest article lacks it: no answer.
    found = _found(
        ("interest-rate", 4.5, {"interest", "rate", "month"}), frequency={"interest": 6, "rate": 3, "save": 1}
    )
    assert found.fitting() == []
    answered = _found(("interest-rate", 4.5, {"interest", "rate", "month"}), frequency={"interest": 6, "rate": 3})
    assert [p.article for p in answered.fitting()] == ["interest-rate"]


def test_only_candidates_nearly_as_well_ranked_as_the_best_are_offered() -> None:
    terms = {"dispute", "charge"}
    found = _found(("a", 5.0, terms), ("b", 4.75, terms), ("c", 2.5, terms), frequency={"dispute": 2, "charge": 9})
    assert [p.article for p in found.fitting()] == ["a", "b"]
    # Words met only here and there in a body are no answer, however many of them.
    assert _found(("a", 0.2, terms), frequency={"dispute": 2, "charge": 9}).fitting() == []


def test_a_question_is_the_librarys_when_a_passage_fits_and_the_rules_do_not_answer_it() -> None:
    fits = [_passage("annual-fee")]
    assert (
        read_with_library(
            understand("Can I get the annual fee waived?", ()), "Can I get the annual fee waived?", fits
        ).intent
        == "policy"
    )
    assert read_with_library(understand("I lost my card", ()), "I lost my card", fits).intent == "policy"
    # Asking about this bill, or for a person, stays as it was; with nothing fitting, nothing changes.
    why = "Why is my bill higher?"
    assert read_with_library(understand(why, ()), why, fits).intent == "bill_change"
    person = "I want to talk to a person"
    assert read_with_library(understand(person, ()), person, fits).handover
    assert read_with_library(understand(person, ()), person, fits).intent == "out_of_scope"
    assert read_with_library(understand("I lost my card", ()), "I lost my card", []).intent == "out_of_scope"


def test_the_reason_for_each_fee_is_the_passage_tagged_with_its_label_else_its_kind() -> None:
    rng_facts = [random_facts(random.Random(seed)) for seed in range(200)]
    facts = next(f for f in rng_facts if {e.kind for e in f.entries} >= {"fee", "interest"})
    fee_label = next(e.label for e in facts.entries if e.kind == "fee").lower()
    tagged = {"interest": _passage("interest-how"), fee_label: _passage("late-fee"), "fee": _passage("fees")}
    assert {p.article for p in reasons(facts, tagged)} == {"interest-how", "late-fee"}
    assert reasons(facts, {}) == ()


def test_a_new_version_of_a_quoted_passage_is_a_new_cache_key() -> None:
    digest = "f" * 64
    assert quoted_digest(digest, []) == digest
    v1, v2 = quoted_digest(digest, [_passage("a", 1)]), quoted_digest(digest, [_passage("a", 2)])
    assert len({digest, v1, v2}) == 3


def test_the_plan_may_name_only_a_passage_it_was_offered() -> None:
    facts = random_facts(random.Random(3))
    check = PlanCheck(facts, "policy", passages=2)
    schema = plan_schema(check.allowed())
    assert '"passage"' in json.dumps(schema)
    assert check.check(PassageClaim(n=3)) is not None
    assert check.check(PassageClaim(n=2)) is None
    none_offered = PlanCheck(facts, "policy")
    assert none_offered.check(NoAnswer()) is None  # "none fits" is true when nothing is offered
    assert msgspec.json.encode(PassageClaim(n=1)) == b'{"claim":"passage","n":1}'


def test_the_search_looks_only_at_articles_holding_a_term_without_which_none_could_fit() -> None:
    terms = Terms(total=100, frequency={"annual": 5, "fee": 40, "pay": 80, "when": 0})
    deciding = terms.deciding()
    assert deciding[0] == "annual"  # the rarest first
    # An article lacking every deciding term holds too little of the question's weight to fit.
    rest = set(terms.frequency) - set(deciding)
    assert terms.coverage(rest) < MIN_COVERAGE
    assert terms.coverage(set(terms.frequency)) == 1.0


def test_a_question_mostly_of_words_no_article_holds_searches_nothing() -> None:
    # "mortgage" and "remortgage" are in no article: no article can hold enough of the question.
    terms = Terms(total=90, frequency={"mortgage": 0, "remortgage": 0, "rate": 20})
    assert terms.deciding() == []
    assert Terms(total=90, frequency={"mortgage": 0, "rate": 20, "interest": 8}).deciding() == ["interest"]
