"""The straight line from a question to an audited answer: records -> facts -> text -> audit."""

from __future__ import annotations

import uuid
from datetime import date

import msgspec
from sqlalchemy.ext.asyncio import AsyncEngine

from app.answers.schemas import (
    DriverOut,
    ExplanationRequest,
    ExplanationResponse,
    PaymentOut,
    StatementOut,
    TotalsOut,
)
from app.data.audit import record_answer
from app.data.database import autocommit
from app.data.history import load_history
from app.data.tenants import Principal
from app.domain.facts import BillFacts, compute_facts
from app.prompts import render_fallback
from app.timing import Stopwatch


class NotFound(LookupError):
    """The tenant has no such account or statement (another tenant's account looks the same)."""


def _response(
    answer_id: uuid.UUID, facts: BillFacts, explanation: str, locale: str, timings: dict[str, float]
) -> ExplanationResponse:
    s = facts.statement
    return ExplanationResponse(
        answer_id=str(answer_id),
        account_ref=facts.account_ref,
        currency=facts.currency,
        statement=StatementOut(s.period_start, s.period_end, s.due_date, s.minimum_due),
        totals=TotalsOut(current=s.new_balance, previous=facts.previous_balance, difference=facts.difference),
        drivers=[DriverOut(kind=d.kind, label=d.label, amount=d.amount) for d in facts.drivers],
        payment=PaymentOut(
            status=facts.payment.status,
            paid_amount=facts.payment.paid_amount,
            outstanding=facts.payment.outstanding,
            as_of=facts.as_of,
        ),
        explanation=explanation,
        locale=locale,  # type: ignore[arg-type]  # checked by the request schema or the database
        source="fallback",
        timings_ms=timings,
    )


async def explain(
    engine: AsyncEngine,
    principal: Principal,
    request: ExplanationRequest,
    *,
    channel: str,
    today: date,
    stopwatch: Stopwatch,
) -> ExplanationResponse:
    as_of = request.as_of or today
    with stopwatch.stage("db"):
        async with autocommit(engine) as conn:
            history = await load_history(
                conn, principal.tenant_id, request.account_ref, request.statement_period_end, as_of
            )
    if history is None:
        raise NotFound(f"account {request.account_ref!r} not found")
    wanted = request.statement_period_end
    if not history.statements or (wanted and history.statements[-1].period_end != wanted):
        which = f"ending on {wanted}" if wanted else "yet"
        raise NotFound(f"account {request.account_ref!r} has no statement {which}")

    with stopwatch.stage("facts"):
        facts = compute_facts(history, as_of)
    locale = request.locale or history.customer_locale
    with stopwatch.stage("explain"):
        explanation = render_fallback(facts, locale)

    answer_id = uuid.uuid4()
    answer = _response(answer_id, facts, explanation, locale, stopwatch.snapshot())
    with stopwatch.stage("audit"):
        async with autocommit(engine) as conn:
            await record_answer(
                conn,
                answer_id=answer_id,
                tenant_id=principal.tenant_id,
                account_id=history.account_id,
                statement_id=facts.statement.id,
                channel=channel,
                question=request.question,
                locale=locale,
                answer_json=msgspec.json.encode(answer).decode(),
                source=answer.source,
                timings_json=msgspec.json.encode(answer.timings_ms).decode(),
            )
    return msgspec.structs.replace(answer, timings_ms=stopwatch.snapshot())
