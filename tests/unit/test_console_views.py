"""What the console shows for an audited answer: a label for every fallback rule, with its detail; and
the console's words name every code its pages show (a rule, a stage, a role, a status…)."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, get_args

import pytest

from app import locales
from app.api.console.views import answer_view
from app.api.console.words import words
from app.api.waterfall import STAGES
from app.data.audit import AnswerRecord
from app.domain.claims import CLAIM_TYPES, Action, Direction
from app.domain.facts import DriverKind, PaymentStatus
from app.domain.reasons import DETAILS, RULES, Reason, quoted
from app.domain.vocabulary import Channel, ConversationStatus, HandoverReason, Intent, Role, Source
from tests.pseudo_locale import english_in_reasons


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
        ("fallback_detail", DETAILS),
        ("claim_kind", CLAIM_TYPES),
        ("direction", get_args(Direction)),
        ("action", get_args(Action)),
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


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        (
            'status_claim:status_said {"claimed_status":"paid","status":"unpaid"}',
            "the model stated a payment status the facts do not (it said Paid; the facts say Unpaid)",
        ),
        (
            'off_intent:claim_for {"kind":"minimum_due","intents":["bill_change","charge"]}',
            "the model's plan held a claim that does not fit the question"
            " (a claim of minimum due for a question about bill change and charge)",
        ),
        (
            'missing_claim:lacks {"kinds":["change","driver"]}',
            "the model's plan did not answer the question (no claim of change or driver)",
        ),
        (
            'missing_claim:lacks_claim {"claim":"next_step","action":"agent"}',
            "the model's plan did not answer the question (no claim of next step (talk to an agent))",
        ),
        (
            'unslotted_figure:quoted {"text":"12.00"}',
            "a sentence wrote a figure or date outside its slot (\u201c12.00\u201d)",
        ),
        # Written before details had forms: the detail quoted as it was stored.
        ("unslotted_figure:12.00", "a sentence wrote a figure or date outside its slot (\u201c12.00\u201d)"),
    ],
)
def test_a_stored_reason_shows_its_rule_and_detail_in_the_consoles_words(stored: str, shown: str) -> None:
    assert answer_view(record("fallback", stored)).validation == f"Deterministic answer served: {shown}"


# A reason of each detail form, with the values its check writes (the plan's refusals are read from the
# checks themselves in tests/unit/test_plan_contradictions.py).
REASONS = [
    Reason(rule="invalid_plan", detail="claims_over", values={"limit": 5}),
    Reason(rule="off_intent", detail="claim_for", values={"kind": "passage", "intents": ["payment"]}),
    Reason(rule="wrong_direction", detail="bill_went", values={"claimed": "up", "went": "down"}),
    Reason(rule="unknown_index", detail="driver", values={"n": 4}),
    Reason(rule="wrong_driver", detail="driver_went", values={"n": 1, "went": "down", "claimed": "up"}),
    Reason(rule="unknown_index", detail="transaction", values={"n": 9}),
    Reason(rule="wrong_subject", detail="not_a_fee", values={"n": 2}),
    Reason(rule="wrong_subject", detail="not_asked", values={"n": 3}),
    Reason(rule="unknown_index", detail="passage", values={"n": 2}),
    Reason(rule="status_claim", detail="status_said", values={"claimed_status": "overdue", "status": "paid"}),
    Reason(rule="wrong_subject", detail="facts_answer"),
    Reason(rule="wrong_subject", detail="after_no_answer", values={"kind": "fees_interest"}),
    Reason(rule="not_applicable", detail="paid_in_full", values={"kind": "minimum_due"}),
    Reason(rule="missing_claim", detail="lacks", values={"kinds": ["change", "new_balance"]}),
    Reason(rule="missing_claim", detail="lacks_claim", values={"claim": "payment_status", "status": "unpaid"}),
    Reason(rule="wrong_language", detail="share", values={"share": "12%"}),
    Reason(rule="wrong_driver", detail="slot_went", values={"slot": "{driver_1}", "went": "up", "claimed": "down"}),
    Reason(rule="wrong_direction", detail="sentence_went", values={"went": "same", "claimed": "up"}),
    Reason(rule="engine_error", detail="stream_ended"),
    Reason(rule="engine_timeout", detail="shutdown"),
    quoted("role_mismatch", "Your minimum due is {new_balance}"),
]
_SLOT = re.compile(r"\{(\w+)\}")


def test_every_detail_form_reads_back_as_written() -> None:
    assert {r.detail for r in REASONS} == set(DETAILS)
    assert [r for r in REASONS if Reason.parse(str(r)) != r] == []


@pytest.mark.parametrize("locale", locales.locales())
def test_every_locales_words_for_a_detail_take_the_values_its_check_writes(locale: str) -> None:
    said = locales.words(locale)["console"]["fallback_detail"]
    taken = {r.detail: set(_SLOT.findall(said[r.detail])) for r in REASONS}
    assert taken == {r.detail: {"claim"} if r.detail == "lacks_claim" else set(r.values) for r in REASONS}


def test_in_the_pseudo_locale_no_detail_is_plain_english_but_what_was_written(tmp_path: Path) -> None:
    assert english_in_reasons(REASONS, tmp_path) == {str(r): [] for r in REASONS}


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
