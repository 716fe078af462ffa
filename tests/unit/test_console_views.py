"""What the console shows for an audited answer: a label for every fallback rule, with its detail."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from app.api.console.views import FALLBACK_REASON, answer_view
from app.data.audit import AnswerRecord
from app.domain.reasons import RULES


def record(source: str, fallback_reason: str | None) -> AnswerRecord:
    return AnswerRecord(
        id=uuid.UUID(int=1),
        created_at=datetime(2026, 11, 26, 9, 30, tzinfo=UTC),
        account_ref="A-1",
        channel="console",
        question="Why is my bill higher than last month?",
        locale="en",
        customer_locale="en",
        answer={"explanation": "Your new balance is 124.99 EUR."},
        source=source,
        intent="bill_increase",
        prompt_version="v1",
        model=None,
        usage=None,
        fallback_reason=fallback_reason,
        timings={"total": 12.0},
        stage_starts=None,
    )


def test_every_fallback_rule_has_a_label() -> None:
    assert set(FALLBACK_REASON) == set(RULES)


def test_a_stored_reason_shows_its_rule_label_and_detail() -> None:
    view = answer_view(record("fallback", "unslotted_figure:12.00"))
    assert view.validation == "Deterministic answer served: a sentence wrote a figure or date outside its slot (12.00)"


def test_a_reason_without_detail_shows_the_label_alone() -> None:
    view = answer_view(record("fallback", "engine_off"))
    assert view.validation == "Deterministic answer served: no model is configured"


@pytest.mark.parametrize(
    ("source", "validation"),
    [
        ("model", "Passed: every claim of the model's plan held against the facts, said in reviewed wordings"),
        ("cache", "Passed when first answered (served from the answer cache)"),
    ],
)
def test_a_served_model_answer_passed_validation(source: str, validation: str) -> None:
    assert answer_view(record(source, None)).validation == validation
