"""What the console shows for an audited answer: a label for every fallback rule, with its detail; and
the console's words name every code its pages show (a rule, a stage, a role, a status…)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, get_args

import pytest

from app import locales
from app.api.console.views import answer_view
from app.api.console.words import words
from app.api.waterfall import STAGES
from app.data.audit import AnswerRecord
from app.domain.facts import DriverKind, PaymentStatus
from app.domain.reasons import RULES
from app.domain.vocabulary import Channel, ConversationStatus, HandoverReason, Intent, Role, Source


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


@pytest.mark.parametrize(
    ("key", "codes"),
    [
        ("fallback_reason", RULES),
        ("stage", STAGES),
        ("role", get_args(Role)),
        ("handover_reason", get_args(HandoverReason)),
        ("source", get_args(Source)),
        ("channel", get_args(Channel)),
        ("intent", get_args(Intent)),
        ("payment_status", get_args(PaymentStatus)),
        ("driver_kind", get_args(DriverKind)),
        ("article_status", ("draft", "live", "retired")),  # migration 0017's CHECK
        ("status", (*get_args(ConversationStatus), "an_agent")),
    ],
)
def test_the_console_words_name_every_code(key: str, codes: Any) -> None:
    assert set(words()[key]) == set(codes)


def test_a_stored_reason_shows_its_rule_label_and_detail() -> None:
    view = answer_view(record("fallback", "unslotted_figure:12.00"))
    assert view.validation == "Deterministic answer served: a sentence wrote a figure or date outside its slot (12.00)"


def test_every_locale_can_be_the_consoles() -> None:
    """Each locale folder holds all the console says, so a bank can have its console speak any (the
    names it has for other languages may lag a new locale's folder: that one shows its own name)."""

    def keys(value: Any, path: str = "") -> set[str]:
        if path == "/language_names":
            return set()
        if isinstance(value, dict):
            return {k for name, v in value.items() for k in keys(v, f"{path}/{name}")}
        return {path}

    console = keys(words())
    assert {name: keys(locales.words(name)["console"]) == console for name in locales.locales()} == {
        name: True for name in locales.locales()
    }


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
