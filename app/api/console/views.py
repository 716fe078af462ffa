"""What the console's pages show, written out for people: a statement comparison and an audited answer."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

import msgspec

from app import locales
from app.answers.schemas import SourceOut
from app.api.waterfall import waterfall
from app.data.audit import AnswerRecord
from app.domain.facts import BillFacts, Driver
from app.domain.reasons import Reason, Rule

# The console speaks one language (its locale.json says "console": true); amounts and dates are
# written its way in every tenant.
LOCALE = locales.console()


class _Names(Mapping[str, str]):
    """Each locale's name as the console shows it, from its folder (app/locales.py): "简体中文 (Simplified Chinese)"."""

    def __getitem__(self, locale: str) -> str:
        if locale not in locales.registry():
            raise KeyError(locale)
        data = locales.data(locale)
        return data.name if data.name == data.english_name else f"{data.name} ({data.english_name})"

    def __iter__(self) -> Iterator[str]:
        return iter(locales.registry())

    def __len__(self) -> int:
        return len(locales.registry())


LOCALES = _Names()
# The console's words for a statement and an answer (prompts/locales/<LOCALE>/words.json "console"):
# payment statuses, driver kinds, and why the deterministic answer was served, by the reason's rule
# (app/answers/generation.py, app/domain/plan.py, app/domain/validation.py).
_WORDS: dict[str, dict[str, str]] = locales.words(LOCALE)["console"]
PAYMENT_STATUS = _WORDS["payment_status"]
DRIVER_KIND = _WORDS["driver_kind"]
FALLBACK_REASON: dict[Rule, str] = _WORDS["fallback_reason"]  # type: ignore[assignment]


class Line(msgspec.Struct, frozen=True, kw_only=True):
    label: str
    amount: str


class StatementView(msgspec.Struct, frozen=True, kw_only=True):
    period: str
    previous_period: str | None
    previous_balance: str
    new_balance: str
    difference: str
    drivers: list[Line]
    payment_status: str
    paid_since: str
    outstanding: str
    minimum_due: str
    due_date: str
    as_of: str


class StageRow(msgspec.Struct, frozen=True, kw_only=True):
    stage: str
    label: str
    starts: str
    takes: str
    left: float  # the bar, in per cent of the time axis
    width: float


class AnswerView(msgspec.Struct, frozen=True, kw_only=True):
    record: AnswerRecord
    explanation: str
    plan: str  # the model's claims, as checked: "change (up) → driver 1 (up)"; "—" when none
    validation: str
    cached_share: str
    stages: list[StageRow]
    total: str
    sources: list[SourceOut]  # the help articles the answer quotes, each at the version quoted


def _driver(driver: Driver) -> str:
    kind = DRIVER_KIND[driver.kind]
    return f"{kind}: {driver.label}" if driver.label else kind


def statement_view(facts: BillFacts) -> StatementView:
    s, previous, currency = facts.statement, facts.previous, facts.currency

    def amount(value: Decimal, *, sign: bool = False) -> str:
        return locales.money(value, currency, LOCALE, sign=sign)

    return StatementView(
        period=f"{locales.day(s.period_start, LOCALE)} to {locales.day(s.period_end, LOCALE)}",
        previous_period=f"{locales.day(previous.period_start, LOCALE)} to {locales.day(previous.period_end, LOCALE)}"
        if previous
        else None,
        previous_balance=amount(facts.previous_balance),
        new_balance=amount(s.new_balance),
        difference=amount(facts.difference, sign=True),
        drivers=[Line(label=_driver(d), amount=amount(d.amount, sign=True)) for d in facts.drivers],
        payment_status=PAYMENT_STATUS[facts.payment.status],
        paid_since=amount(facts.payment.paid_amount),
        outstanding=amount(facts.payment.outstanding),
        minimum_due=amount(s.minimum_due),
        due_date=locales.day(s.due_date, LOCALE),
        as_of=locales.day(facts.as_of, LOCALE),
    )


def milliseconds(ms: float) -> str:
    return f"{ms:.2f} ms" if ms < 10 else f"{ms:,.1f} ms"


def _validation(record: AnswerRecord) -> str:
    if record.source == "model":
        return "Passed: every claim of the model's plan held against the facts, said in reviewed wordings"
    if record.source == "cache":
        return "Passed when first answered (served from the answer cache)"
    try:
        reason = Reason.parse(record.fallback_reason or "")
    except ValueError:  # none, or a rule this version does not know: shown as stored
        return f"Deterministic answer served: {record.fallback_reason or ''}"
    why = FALLBACK_REASON[reason.rule]
    return f"Deterministic answer served: {why}" + (f" ({reason.detail})" if reason.detail else "")


def _cached_share(record: AnswerRecord) -> str:
    """Share of the prompt the engine's prefix cache served; none when the model was not asked."""
    usage = record.usage
    if record.source == "cache" or not usage or not usage.get("prompt_tokens"):
        return "—"
    share = usage["cached_tokens"] / usage["prompt_tokens"]
    return f"{share:.0%} ({usage['cached_tokens']} of {usage['prompt_tokens']} prompt tokens)"


def _plan(record: AnswerRecord) -> str:
    return " → ".join(_claim(c) for c in record.answer.get("plan") or []) or "—"


def _claim(claim: dict[str, Any]) -> str:
    text = str(claim.get("claim", "?")).replace("_", " ") + (f" {claim['n']}" if "n" in claim else "")
    extra = [str(claim[a]) for a in ("direction", "status", "action") if a in claim]
    return text + (f" ({', '.join(extra)})" if extra else "")


def answer_view(record: AnswerRecord) -> AnswerView:
    bars, axis = waterfall(record.stage_starts or {}, record.timings)
    return AnswerView(
        record=record,
        explanation=str(record.answer.get("explanation", "")),
        plan=_plan(record),
        validation=_validation(record),
        cached_share=_cached_share(record),
        stages=[
            StageRow(
                stage=b.stage,
                label=b.label,
                starts=milliseconds(b.start_ms),
                takes=milliseconds(b.duration_ms),
                left=b.left,
                width=b.width,
            )
            for b in bars
        ],
        total=milliseconds(axis),
        sources=msgspec.convert(record.answer.get("sources") or [], list[SourceOut]),
    )
