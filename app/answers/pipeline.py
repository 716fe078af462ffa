"""The straight line from a question to an audited answer: admission -> records -> facts -> intent ->
deterministic text -> answer cache -> prompt -> engine -> validation -> cache -> audit."""

from __future__ import annotations

import uuid
from datetime import date

import msgspec
from sqlalchemy.ext.asyncio import AsyncEngine

from app.answers import cache
from app.answers.cache import CACHEABLE_INTENTS, CacheKey
from app.answers.generation import ask_model
from app.answers.schemas import (
    ExplanationRequest,
    ExplanationResponse,
    PaymentOut,
    StatementOut,
    TotalsOut,
    Usage,
)
from app.data.audit import record_answer
from app.data.database import autocommit
from app.data.history import load_history
from app.data.tenants import Principal
from app.domain.facts import BillFacts, compute_facts
from app.domain.intents import Intent, classify, mentioned
from app.domain.priority import QUEUE_DEADLINE_S, effective_level
from app.domain.validation import validate
from app.inference.engine import Engine
from app.inference.scheduler import Scheduler
from app.metrics import ANSWERS, CACHED_TOKENS, COMPLETION_TOKENS, FALLBACKS, PROMPT_TOKENS, SPEC_ACCEPT_RATE
from app.prompts import PROMPT_VERSION, render_fallback, render_prompt
from app.settings import Settings
from app.timing import Stopwatch


class NotFound(LookupError):
    """The tenant has no such account or statement (another tenant's account looks the same)."""


def _response(
    answer_id: uuid.UUID,
    facts: BillFacts,
    *,
    explanation: str,
    locale: str,
    source: str,
    intent: Intent,
    model: str | None,
    usage: Usage | None,
    timings: dict[str, float],
) -> ExplanationResponse:
    s = facts.statement
    return ExplanationResponse(
        answer_id=str(answer_id),
        account_ref=facts.account_ref,
        currency=facts.currency,
        statement=StatementOut(s.period_start, s.period_end, s.due_date, s.minimum_due),
        totals=TotalsOut(current=s.new_balance, previous=facts.previous_balance, difference=facts.difference),
        drivers=facts.drivers,
        payment=PaymentOut(
            status=facts.payment.status,
            paid_amount=facts.payment.paid_amount,
            outstanding=facts.payment.outstanding,
            as_of=facts.as_of,
        ),
        explanation=explanation,
        locale=locale,  # type: ignore[arg-type]  # checked by the request schema or the database
        source=source,  # type: ignore[arg-type]
        intent=intent,
        prompt_version=PROMPT_VERSION,
        timings_ms=timings,
        model=model,
        usage=usage,
    )


async def explain(
    db: AsyncEngine,
    llm: Engine | None,
    scheduler: Scheduler,
    settings: Settings,
    principal: Principal,
    request: ExplanationRequest,
    *,
    channel: str,
    today: date,
    stopwatch: Stopwatch,
) -> ExplanationResponse:
    """Admission first (rate limit, priority, fairness, deadline), then the answer."""
    level = effective_level(principal.priority_class, channel)
    deadline_s = QUEUE_DEADLINE_S[channel] * settings.queue_deadline_scale
    async with scheduler.admit(principal.tenant_slug, principal.limits, level, deadline_s) as ticket:
        stopwatch.stages["admission"] = ticket.wait_s * 1000
        return await _answer(db, llm, settings, principal, request, channel, level, today, stopwatch)


async def _answer(
    db: AsyncEngine,
    llm: Engine | None,
    settings: Settings,
    principal: Principal,
    request: ExplanationRequest,
    channel: str,
    level: int,
    today: date,
    stopwatch: Stopwatch,
) -> ExplanationResponse:
    as_of = request.as_of or today
    with stopwatch.stage("db"):
        async with autocommit(db) as conn:
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
        labels = {e.label for e in facts.entries}
        intent = classify(request.question, labels)
    locale = request.locale or history.customer_locale

    answer_id = uuid.uuid4()
    source, reason, usage, model = "fallback", None, None, None
    cache_key = None
    if llm is not None and intent in CACHEABLE_INTENTS:
        cache_key = CacheKey(
            principal.tenant_id, facts.statement.id, history.statements[-1].data_version, intent, locale,
            PROMPT_VERSION, llm.model, as_of,
        )  # fmt: skip
        with stopwatch.stage("cache"):
            async with autocommit(db) as conn:
                cached = await cache.lookup(conn, cache_key)
        if cached is not None:
            # The original answer, its id included; only the source and the timings are this request's.
            hit = msgspec.structs.replace(msgspec.json.decode(cached, type=ExplanationResponse), source="cache")
            return await _audit(db, principal, request, history.account_id, facts.statement.id, channel, hit, None,
                                stopwatch)  # fmt: skip
    with stopwatch.stage("explain"):  # the deterministic answer: served, or kept for a fallback
        explanation = render_fallback(
            intent, facts, locale, policy=principal.policy, focus=mentioned(request.question, labels)
        )
    if intent == "out_of_scope":
        reason = "out_of_scope"  # a polite refusal needs no model
    elif llm is None:
        reason = "engine_off"
    else:
        with stopwatch.stage("prompt"):
            prompt = render_prompt(
                policy=principal.policy,
                intent=intent,
                facts=facts,
                question=request.question,
                locale=locale,
                chat_template=settings.chat_template,
                layout=settings.prompt_layout,
            )
        outcome = await ask_model(
            llm,
            prompt,
            request_id=answer_id.hex,
            priority=level,
            max_tokens=settings.engine_max_tokens,
            timeout_s=settings.engine_timeout_s,
            stopwatch=stopwatch,
        )
        model = llm.model
        usage = outcome.usage
        if usage is not None:
            PROMPT_TOKENS.labels(principal.tenant_slug).inc(usage.prompt_tokens)
            CACHED_TOKENS.labels(principal.tenant_slug).inc(usage.cached_tokens)
            COMPLETION_TOKENS.labels(principal.tenant_slug).inc(usage.completion_tokens)
        if outcome.spec_accept_rate is not None:
            SPEC_ACCEPT_RATE.observe(outcome.spec_accept_rate)
        reason = outcome.reason
        if outcome.text is not None:
            with stopwatch.stage("validate"):
                verdict = validate(outcome.text, facts, locale)
            if verdict.ok:
                explanation, source = outcome.text.strip(), "model"
            else:
                reason = verdict.reason
    if reason is not None:
        FALLBACKS.labels(reason=reason.split(":", 1)[0]).inc()

    answer = _response(
        answer_id, facts, explanation=explanation, locale=locale, source=source, intent=intent,
        model=model, usage=usage, timings=stopwatch.snapshot(),
    )  # fmt: skip
    if source == "model" and cache_key is not None:  # only validated answers are remembered
        async with autocommit(db) as conn:
            await cache.store(conn, cache_key, msgspec.json.encode(answer).decode())
    return await _audit(db, principal, request, history.account_id, facts.statement.id, channel, answer, reason,
                        stopwatch)  # fmt: skip


async def _audit(
    db: AsyncEngine,
    principal: Principal,
    request: ExplanationRequest,
    account_id: int,
    statement_id: int,
    channel: str,
    answer: ExplanationResponse,
    reason: str | None,
    stopwatch: Stopwatch,
) -> ExplanationResponse:
    """Every answered request leaves a row (its own id: a cache hit repeats an earlier answer's id)."""
    ANSWERS.labels(source=answer.source).inc()
    answer = msgspec.structs.replace(answer, timings_ms=stopwatch.snapshot())
    with stopwatch.stage("audit"):
        async with autocommit(db) as conn:
            await record_answer(
                conn,
                answer_id=uuid.UUID(answer.answer_id) if answer.source != "cache" else uuid.uuid4(),
                tenant_id=principal.tenant_id,
                account_id=account_id,
                statement_id=statement_id,
                channel=channel,
                question=request.question,
                locale=answer.locale,
                answer_json=msgspec.json.encode(answer).decode(),
                source=answer.source,
                intent=answer.intent,
                prompt_version=answer.prompt_version,
                model=answer.model,
                usage_json=msgspec.json.encode(answer.usage).decode() if answer.usage else None,
                fallback_reason=reason,
                timings_json=msgspec.json.encode(answer.timings_ms).decode(),
            )
    return msgspec.structs.replace(answer, timings_ms=stopwatch.snapshot())
