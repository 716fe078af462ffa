"""What the console's pages show, written out for people: a statement comparison and an audited answer."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from decimal import Decimal
from typing import Any

import msgspec

from app import locales
from app.answers.schemas import SourceOut
from app.api.console.words import say, words
from app.api.waterfall import waterfall
from app.data.audit import AnswerRecord
from app.domain.facts import BillFacts, Driver
from app.domain.reasons import Reason


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
    payment_code: str  # the status's code: the page's style for it
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


def _driver(driver: Driver, w: dict[str, Any]) -> str:
    kind = w["driver_kind"][driver.kind]
    return say(w["driver_line"], kind=kind, label=driver.label) if driver.label else kind


def statement_view(facts: BillFacts) -> StatementView:
    s, previous, currency = facts.statement, facts.previous, facts.currency
    # Amounts and dates are written the console's way, whatever the tenant's customers speak.
    locale, w = locales.console(), words()

    def amount(value: Decimal, *, sign: bool = False) -> str:
        return locales.money(value, currency, locale, sign=sign)

    def period(start: date, end: date) -> str:
        return say(w["time"]["period"], start=locales.day(start, locale), end=locales.day(end, locale))

    return StatementView(
        period=period(s.period_start, s.period_end),
        previous_period=period(previous.period_start, previous.period_end) if previous else None,
        previous_balance=amount(facts.previous_balance),
        new_balance=amount(s.new_balance),
        difference=amount(facts.difference, sign=True),
        drivers=[Line(label=_driver(d, w), amount=amount(d.amount, sign=True)) for d in facts.drivers],
        payment_status=w["payment_status"][facts.payment.status],
        payment_code=facts.payment.status,
        paid_since=amount(facts.payment.paid_amount),
        outstanding=amount(facts.payment.outstanding),
        minimum_due=amount(s.minimum_due),
        due_date=locales.day(s.due_date, locale),
        as_of=locales.day(facts.as_of, locale),
    )


def milliseconds(ms: float) -> str:
    return say(words()["time"]["ms"], ms=f"{ms:.2f}" if ms < 10 else f"{ms:,.1f}")


def _validation(record: AnswerRecord) -> str:
    w = words()
    if record.source != "fallback":
        return str(w["validation"][record.source])
    try:
        why = reason_words(Reason.parse(record.fallback_reason or ""))
    except ValueError:  # none, or a rule this version does not know: shown as stored
        why = record.fallback_reason or ""
    return say(w["validation"]["fallback"], why=why)


# A detail's values that are codes, by the words that name them; the others (a number, a slot, a
# share) are shown as they are.
_CODES = {
    "direction": "direction",
    "kind": "claim_kind",
    "kinds": "claim_kind",
    "intents": "intent",
    "went": "direction",
    "claimed": "direction",
    "status": "payment_status",
    "claimed_status": "payment_status",
    "action": "action",
}


def reason_words(reason: Reason) -> str:
    """Why the model's answer was not served, in the console's words: the rule's, then what exactly
    failed (app/domain/reasons.py), its codes named as the console names them."""
    w = words()
    why: str = w["fallback_reason"][reason.rule]
    if reason.detail is None:
        return why
    if reason.detail == "lacks_claim":
        detail = say(w["fallback_detail"]["lacks_claim"], claim=_claim(reason.values, w))
    else:
        detail = say(w["fallback_detail"][reason.detail], **_named(reason.values, w))
    return say(w["reason_detail"], why=why, detail=detail)


def _named(values: Mapping[str, Any], w: dict[str, Any]) -> dict[str, Any]:
    """Each code among the values in the console's words (one it has no word for, as it is)."""
    named = {}
    for key, value in values.items():
        table = w[_CODES[key]] if key in _CODES else None
        if table is None:
            named[key] = value
        elif isinstance(value, list):
            named[key] = w["list_or" if key == "kinds" else "list_and"].join(table.get(v, v) for v in value)
        else:
            named[key] = table.get(value, value)
    return named


def _cached_share(record: AnswerRecord) -> str:
    """Share of the prompt the engine's prefix cache served; none when the model was not asked."""
    usage = record.usage
    if record.source == "cache" or not usage or not usage.get("prompt_tokens"):
        return "—"
    share = usage["cached_tokens"] / usage["prompt_tokens"]
    said: str = words()["page"]["answer"]["cached_share"]
    return say(said, share=f"{share:.0%}", cached=usage["cached_tokens"], prompt=usage["prompt_tokens"])


def _plan(record: AnswerRecord) -> str:
    w = words()
    return " → ".join(_claim(c, w) for c in record.answer.get("plan") or []) or "—"


def _claim(claim: Mapping[str, Any], w: dict[str, Any]) -> str:
    """A claim as the model wrote it, in the console's words: "change (up)", "driver 1 (up)"."""
    kind = str(claim.get("claim", "?"))
    text = str(w["claim_kind"].get(kind, kind)) + (f" {claim['n']}" if "n" in claim else "")
    named = _named({key: claim[key] for key in ("direction", "status", "action") if key in claim}, w)
    extra = [str(v) for v in named.values()]
    return text + (f" ({', '.join(extra)})" if extra else "")


def answer_view(record: AnswerRecord) -> AnswerView:
    bars, axis = waterfall(record.stage_starts or {}, record.timings)
    stage = words()["stage"]
    return AnswerView(
        record=record,
        explanation=str(record.answer.get("explanation", "")),
        plan=_plan(record),
        validation=_validation(record),
        cached_share=_cached_share(record),
        stages=[
            StageRow(
                stage=b.stage,
                label=stage[b.stage],
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
