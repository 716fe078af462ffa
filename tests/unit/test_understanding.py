"""Question understanding measured on the labelled set (tests/data), and each rule on its own."""

from __future__ import annotations

import timeit

import pytest

from app.domain.understanding import Context, language_of, understand
from tests.understanding_cases import PARTS, READ_INTENTS, STATEMENTS, load, score

MAIN = STATEMENTS["main"]


def test_the_labelled_set_is_large_and_bilingual() -> None:
    cases = load("tuned") + load("held-out")
    assert len(cases) >= 400
    assert len(load("held-out")) >= 120
    assert min(sum(c.locale == loc for c in cases) for loc in ("en", "zh-CN")) >= 180


def test_intent_accuracy_overall_per_intent_and_per_locale() -> None:
    result = score(load("tuned") + load("held-out"))
    assert result.accuracy("all") >= 0.97
    for key in [*READ_INTENTS, "en", "zh-CN"]:
        assert result.accuracy(key) >= 0.95, key


def test_the_second_blind_set_as_measured() -> None:
    """The held-out measure (docs/understanding.md): 97 of 100 when first measured, rules untouched
    since. A regression guard at that level, never a target to tune to: its misses stay documented."""
    result = score(load("blind2"))
    assert len(load("blind2")) >= 100
    assert result.accuracy("all") >= 0.97
    assert result.fields["handover"] == (100, 100)
    assert result.fields["language"] == (100, 100)


def test_the_blind_set_keeps_its_bars() -> None:
    """The blind set (tests/data/understanding_blind.jsonl) scored 92.5% blind; its misses were then
    fixed (rules) or relabelled (house rules, docs/understanding.md), so it is tuning data now, held
    at what it scores after that: 120 of 120. The held-out measure is a second blind set."""
    result = score(load("blind"))
    assert len(load("blind")) >= 120
    assert result.accuracy("all") >= 1.0
    for key in [*READ_INTENTS, "en", "zh-CN"]:
        assert result.accuracy(key) >= 1.0, key


@pytest.mark.parametrize("part", [part for part in PARTS if part != "blind2"])  # blind2: measured, not a target
def test_the_stated_fields_are_read_right(part: str) -> None:
    """Subjects, choices, language and handover exactly where stated; follow-ups on 85%."""
    fields = score(load(part)).fields
    for field in ("subjects", "choices", "language", "handover", "previous_period"):
        right, stated = fields[field]
        assert right / stated >= 0.95, (field, right, stated)
    right, stated = fields["followup"]
    assert right / stated >= 0.85


@pytest.mark.parametrize(
    ("question", "context", "intent", "subjects"),
    [
        ("And why?", Context("charge", ("City Gym",), "en"), "charge", ("City Gym",)),
        ("what about last month?", Context("fees_interest", (), "en"), "fees_interest", ()),
        ("the gym one?", Context("charge", ("Netflix.com",), "en"), "charge", ("City Gym",)),
        ("the 12 euro one", Context("bill_change", (), "en"), "charge", ("City Gym",)),
        ("is that the only reason?", Context("bill_change", (), "en"), "bill_change", ()),
        ("when is it due?", Context("payment", (), "en"), "payment", ()),
        ("为什么？", Context("charge", ("Deliveroo",), "zh-CN"), "charge", ("Deliveroo",)),
        ("那健身房那笔呢？", Context("charge", ("Blue Cafe",), "zh-CN"), "charge", ("City Gym",)),
        (
            "还有别的吗？",
            Context("fees_interest", ("Late payment fee",), "zh-CN"),
            "fees_interest",
            ("Late payment fee",),
        ),
    ],
)
def test_follow_ups_take_what_they_leave_out_from_the_context(
    question: str, context: Context, intent: str, subjects: tuple[str, ...]
) -> None:
    reading = understand(question, MAIN, context)
    assert (reading.intent, reading.subjects, reading.certain) == (intent, subjects, True)
    assert understand("what about last month?", MAIN, context).previous_period


def test_without_a_context_an_elliptical_question_is_not_decided() -> None:
    reading = understand("And why?", MAIN)
    assert (reading.intent, reading.certain, reading.followup) == ("out_of_scope", False, False)


@pytest.mark.parametrize(
    ("question", "language"),
    [("why is my bill higher", "en"), ("为什么账单多了", "zh-CN"), ("City Gym 这笔是什么", "zh-CN"),
     ("ok", None), ("A-1", None), ("12.00", None), ("?", None)],
)  # fmt: skip
def test_the_language_is_the_questions_own(question: str, language: str | None) -> None:
    assert language_of(question) == language
    assert understand(question, MAIN, Context("payment", (), "en")).language == language


def test_a_merchant_name_does_not_make_a_question_chinese() -> None:
    assert understand("what is 美团外卖", STATEMENTS["zh"]).language == "en"


def test_an_ambiguous_subject_is_asked_back_never_guessed() -> None:
    cafes = STATEMENTS["cafes"]
    reading = understand("what's the cafe one", cafes)
    assert (reading.subjects, set(reading.choices)) == ((), {"Blue Cafe", "Corner Cafe"})
    assert understand("the 6.20 cafe one", cafes).subjects == ("Blue Cafe",)  # the amount decides
    assert set(understand("the 12 euro one", cafes).choices) == {"City Gym", "Uber Trip"}


def test_a_brand_the_statement_lacks_is_not_another_of_its_kind() -> None:
    # Netflix.com is on the statement; Spotify, also a streaming service, is not: nothing is meant.
    reading = understand("Why is my bill higher, is it my Spotify subscription?", MAIN)
    assert (reading.intent, reading.subjects, reading.choices) == ("bill_change", (), ())
    assert understand("what is the streaming one", MAIN).subjects == ("Netflix.com",)


def test_a_whole_amount_is_the_exact_line_first_then_the_units_up_to_the_next() -> None:
    assert understand("the 12 euro one", MAIN).subjects == ("City Gym",)  # 12.00, not McDonald's 12.49
    assert understand("the 12.49 one", MAIN).subjects == ("McDonald's",)
    assert understand("the 86 one", MAIN).subjects == ("FreshMart",)  # 86.40
    assert understand("why is my bill 12.00 higher", MAIN).subjects == ()  # a difference, not a line


@pytest.mark.parametrize(
    ("question", "handover"),
    [("speak to a human", True), ("real person please", True), ("转人工", True), ("人工客服", True),
     ("agent", True), ("are you a real person?", False), ("你是真人吗", False), ("我要投诉", False),
     ("不用转人工，告诉我还款日就行", False)],
)  # fmt: skip
def test_a_request_for_a_person_hands_over(question: str, handover: bool) -> None:
    reading = understand(question, MAIN, Context("charge", ("City Gym",), "en"))
    assert reading.handover is handover
    assert reading.intent == "out_of_scope" or not handover


def test_several_intents_the_first_asked_that_can_be_answered_decides() -> None:
    assert understand("why is my bill higher and did my payment arrive", MAIN).intent == "bill_change"
    assert understand("did my payment arrive and why is my bill higher", MAIN).intent == "payment"
    assert understand("can you raise my limit and explain my bill", MAIN).intent == "bill_change"


def test_a_payment_to_a_merchant_is_a_charge() -> None:
    reading = understand("what is the 12 euro payment to city gym", MAIN)
    assert (reading.intent, reading.subjects) == ("charge", ("City Gym",))


def test_understanding_is_well_under_a_millisecond() -> None:
    """A statement of 38 lines; docs/understanding.md has the measured figure."""
    lines = [*MAIN, *STATEMENTS["cafes"], *STATEMENTS["zh"]]
    context = Context("charge", ("City Gym",), "en")
    runs = 200
    seconds = timeit.timeit(lambda: understand("what about the 12 euro coffee one?", lines, context), number=runs)
    assert seconds / runs < 0.001
