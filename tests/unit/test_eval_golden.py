"""The golden set of the key-field gate: its coverage, its labels, and the eval's classifier on it."""

from __future__ import annotations

from collections import Counter

from app.domain.intents import mentioned
from app.eval import golden
from app.eval.keyfields import key_field_errors
from app.eval.run import demo_policy
from app.prompts import render_fallback


def test_the_golden_set_covers_every_intent_status_locale_and_currency() -> None:
    cases = golden.load()
    assert len(cases) == 80
    assert Counter(c.intent for c in cases) == {"bill_change": 20, "charge": 20, "fees_interest": 20, "payment": 20}
    assert Counter(c.facts.payment.status for c in cases) == {
        "unpaid": 24, "overdue": 24, "paid": 16, "partially_paid": 16,
    }  # fmt: skip
    assert Counter(c.locale for c in cases) == {"zh-CN": 44, "en": 36}
    assert Counter(c.facts.currency for c in cases) == {"EUR": 32, "CNY": 28, "USD": 20}
    assert len({c.id for c in cases}) == 80


def test_each_case_is_what_its_labels_say() -> None:
    """The intent the service's classifier finds and the status the domain computes are the golden labels."""
    labels = {c.id: c for c in golden.load_file().cases}
    cases = golden.load()
    assert [(c.id, c.intent, c.facts.payment.status) for c in cases] == [
        (c.id, labels[c.id].intent, labels[c.id].status) for c in cases
    ]


def test_overdue_cases_include_a_payment_below_the_minimum() -> None:
    overdue = {c.id: c.facts.payment.paid_amount for c in golden.load() if c.facts.payment.status == "overdue"}
    assert sorted({str(v) for v in overdue.values()}) == ["0.00", "10.00", "15.00"]


def test_the_deterministic_answers_have_no_key_field_errors() -> None:
    """The classifier finds nothing wrong in the house's own answers: no false alarms on correct text."""
    known, policy = golden.merchants(), demo_policy()
    found = {}
    for case in golden.load():
        focus = mentioned(case.question, {e.label for e in case.facts.entries})
        text = render_fallback(case.intent, case.facts, case.locale, policy=policy, focus=focus)
        if errors := key_field_errors(text, case.facts, case.intent, known=known):
            found[case.id] = errors
    assert found == {}


def test_a_limit_takes_the_first_cases() -> None:
    assert [c.id for c in golden.load(limit=3)] == [c.id for c in golden.load_file().cases[:3]]
