"""The straight line from a question to an audited answer: admission -> records -> facts -> intent ->
answer cache -> deterministic text -> prompt -> engine -> validation -> cache -> audit.

`converse` gives it as events, for the people who wait for it (chat widget, console): the facts
first, then the text as the model writes it, then the validated answer (or the deterministic text
that replaces it); `explain` gives its last event, the whole answer (JSON API, batch)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import date

import msgspec
from sqlalchemy.ext.asyncio import AsyncEngine

from app.answers import cache
from app.answers.cache import CACHEABLE_INTENTS, CacheKey
from app.answers.generation import Outcome, answer_request, stream_model
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
from app.domain.intents import classify, mentioned
from app.domain.priority import QUEUE_DEADLINE_S, effective_level
from app.domain.records import AccountHistory
from app.domain.validation import validate
from app.domain.vocabulary import Channel, Intent
from app.errors import NotFound
from app.inference.engine import Engine, GenerationRequest
from app.inference.scheduler import Scheduler
from app.metrics import ANSWERS, CACHED_TOKENS, COMPLETION_TOKENS, FALLBACKS, PROMPT_TOKENS, SPEC_ACCEPT_RATE
from app.prompts import PROMPT_VERSION, render_fallback, render_prompt
from app.settings import Settings
from app.timing import Stopwatch


@dataclass(frozen=True, slots=True)
class Turn:
    """One question being answered: who asks, through which channel, about which facts."""

    db: AsyncEngine
    llm: Engine | None
    settings: Settings
    principal: Principal
    request: ExplanationRequest
    channel: Channel
    level: int
    stopwatch: Stopwatch
    history: AccountHistory
    facts: BillFacts
    intent: Intent
    locale: str
    as_of: date
    answer_id: uuid.UUID  # the audit row's, and the answer's unless a cached one is served


# Events of a conversation (`converse`), in this order: Facts, Delta*, Replace?, Final.
class Facts(msgspec.Struct, frozen=True):
    answer: ExplanationResponse  # totals, drivers, payment status; no text yet


class Delta(msgspec.Struct, frozen=True):
    text: str


class Replace(msgspec.Struct, frozen=True):
    text: str  # the deterministic answer, instead of model text that failed validation
    reason: str


class Final(msgspec.Struct, frozen=True):
    answer: ExplanationResponse


ChatEvent = Facts | Delta | Replace | Final


@asynccontextmanager
async def _admitted(
    scheduler: Scheduler, settings: Settings, principal: Principal, channel: Channel, stopwatch: Stopwatch
) -> AsyncIterator[int]:
    """Admission (rate limit, priority, fairness, deadline) for as long as the answer takes; the level."""
    level = effective_level(principal.priority_class, channel)
    deadline_s = QUEUE_DEADLINE_S[channel] * settings.queue_deadline_scale
    async with scheduler.admit(principal.tenant_slug, principal.limits, level, deadline_s) as ticket:
        wait_ms = ticket.wait_s * 1000
        stopwatch.record("admission", stopwatch.elapsed_ms() - wait_ms, wait_ms)
        yield level


async def explain(
    db: AsyncEngine,
    llm: Engine | None,
    scheduler: Scheduler,
    settings: Settings,
    principal: Principal,
    request: ExplanationRequest,
    *,
    channel: Channel,
    today: date,
    stopwatch: Stopwatch,
) -> ExplanationResponse:
    """The whole answer at once (JSON API, batch): `converse`'s last event."""
    return await final_answer(
        converse(db, llm, scheduler, settings, principal, request, channel=channel, today=today, stopwatch=stopwatch)
    )


async def final_answer(events: AsyncIterator[ChatEvent]) -> ExplanationResponse:
    """A conversation's audited answer, once it has ended."""
    answer = None
    async for event in events:  # to the end: admission is released as the conversation completes
        if isinstance(event, Final):
            answer = event.answer
    assert answer is not None, "a conversation always ends with its Final event"
    return answer


async def converse(
    db: AsyncEngine,
    llm: Engine | None,
    scheduler: Scheduler,
    settings: Settings,
    principal: Principal,
    request: ExplanationRequest,
    *,
    channel: Channel,
    today: date,
    stopwatch: Stopwatch,
    customer_ref: str | None = None,
    use_cache: bool = True,
    audit_id: uuid.UUID | None = None,
) -> AsyncIterator[ChatEvent]:
    """The answer as events: the facts, the text as it is written, the audited answer.

    `customer_ref`: only that customer's accounts (the chat widget's token); any other is NotFound.
    `use_cache=False` asks the model again (the console's regenerate). `audit_id` names this
    request's audit row, for a caller that links to it (a cache hit answers with the original
    answer's id). Admission is held until the generator ends: run it to its first event before
    answering, so that shedding and NotFound still become HTTP statuses."""
    async with _admitted(scheduler, settings, principal, channel, stopwatch) as level:
        turn = await _turn(
            db, llm, settings, principal, request, channel, level, today, stopwatch, customer_ref, audit_id
        )  # fmt: skip
        yield Facts(_response(turn, explanation="", source="fallback", model=None, usage=None))
        if use_cache and (hit := await _cached(turn)) is not None:
            yield Delta(hit.explanation)
            yield Final(await _audit(turn, hit, None))
            return
        fallback = _deterministic(turn)
        outcome = None
        if (llm := _model_for(turn)) is not None:
            stream = stream_model(llm, _generation(turn), timeout_s=settings.engine_timeout_s, stopwatch=stopwatch)
            async for item in stream:
                if isinstance(item, Outcome):
                    outcome = item
                else:
                    yield Delta(item)
        else:
            yield Delta(fallback)
        answer, reason = await _conclude(turn, fallback, outcome)
        if outcome is not None and reason is not None:
            yield Replace(answer.explanation, reason)
        yield Final(answer)


async def _turn(
    db: AsyncEngine,
    llm: Engine | None,
    settings: Settings,
    principal: Principal,
    request: ExplanationRequest,
    channel: Channel,
    level: int,
    today: date,
    stopwatch: Stopwatch,
    customer_ref: str | None,
    audit_id: uuid.UUID | None,
) -> Turn:
    as_of = request.as_of or today
    with stopwatch.stage("db"):
        async with autocommit(db) as conn:
            history = await load_history(
                conn, principal.tenant_id, request.account_ref, request.statement_period_end, as_of
            )
    # Another customer's account is exactly as unknown as a missing one.
    if history is None or (customer_ref is not None and history.customer_ref != customer_ref):
        raise NotFound(f"account {request.account_ref!r} not found")
    wanted = request.statement_period_end
    if not history.statements or (wanted and history.statements[-1].period_end != wanted):
        which = f"ending on {wanted}" if wanted else "yet"
        raise NotFound(f"account {request.account_ref!r} has no statement {which}")
    with stopwatch.stage("facts"):
        facts = compute_facts(history, as_of)
        intent = classify(request.question, {e.label for e in facts.entries})
    return Turn(
        db, llm, settings, principal, request, channel, level, stopwatch, history, facts, intent,
        request.locale or history.customer_locale, as_of, audit_id or uuid.uuid4(),
    )  # fmt: skip


def _cache_key(turn: Turn) -> CacheKey | None:
    if turn.llm is None or turn.intent not in CACHEABLE_INTENTS:
        return None
    return CacheKey(
        turn.principal.tenant_id, turn.facts.statement.id, turn.history.statements[-1].data_version, turn.intent,
        turn.locale, PROMPT_VERSION, turn.llm.model, turn.as_of,
    )  # fmt: skip


async def _cached(turn: Turn) -> ExplanationResponse | None:
    """A validated model answer to the same question about the same data, template and model."""
    key = _cache_key(turn)
    if key is None:
        return None
    with turn.stopwatch.stage("cache"):
        async with autocommit(turn.db) as conn:
            cached = await cache.lookup(conn, key)
    if cached is None:
        return None
    # The original answer, its id included; only the source and the timings are this request's.
    return msgspec.structs.replace(msgspec.json.decode(cached, type=ExplanationResponse), source="cache")


def _deterministic(turn: Turn) -> str:
    """The answer served when the model is not asked or fails: rendered from the facts alone."""
    with turn.stopwatch.stage("explain"):
        labels = {e.label for e in turn.facts.entries}
        return render_fallback(
            turn.intent, turn.facts, turn.locale, policy=turn.principal.policy,
            focus=mentioned(turn.request.question, labels),
        )  # fmt: skip


def _model_for(turn: Turn) -> Engine | None:
    return turn.llm if turn.intent != "out_of_scope" else None  # a polite refusal needs no model


def _generation(turn: Turn) -> GenerationRequest:
    with turn.stopwatch.stage("prompt"):
        prompt = render_prompt(
            policy=turn.principal.policy,
            intent=turn.intent,
            facts=turn.facts,
            question=turn.request.question,
            locale=turn.locale,
            chat_template=turn.settings.chat_template,
            layout=turn.settings.prompt_layout,
        )
    return answer_request(
        prompt, request_id=turn.answer_id.hex, priority=turn.level, max_tokens=turn.settings.engine_max_tokens
    )


async def _conclude(turn: Turn, fallback: str, outcome: Outcome | None) -> tuple[ExplanationResponse, str | None]:
    """Validate the model's answer against the facts; serve it, or the deterministic text; remember
    a validated answer; audit. Returns the answer and why it is not the model's (None: it is)."""
    explanation, source, model, usage = fallback, "fallback", None, None
    if outcome is None:
        reason: str | None = "out_of_scope" if turn.intent == "out_of_scope" else "engine_off"
    else:
        assert turn.llm is not None
        model, usage, reason = turn.llm.model, outcome.usage, outcome.reason
        tenant = turn.principal.tenant_slug
        if usage is not None:
            PROMPT_TOKENS.labels(tenant).inc(usage.prompt_tokens)
            CACHED_TOKENS.labels(tenant).inc(usage.cached_tokens)
            COMPLETION_TOKENS.labels(tenant).inc(usage.completion_tokens)
        if outcome.spec_accept_rate is not None:
            SPEC_ACCEPT_RATE.observe(outcome.spec_accept_rate)
        if outcome.text is not None:
            with turn.stopwatch.stage("validate"):
                verdict = validate(outcome.text, turn.facts, turn.locale)
            if verdict.ok:
                explanation, source = outcome.text.strip(), "model"
            else:
                reason = verdict.reason
    if reason is not None:
        FALLBACKS.labels(reason=reason.split(":", 1)[0]).inc()
    answer = _response(turn, explanation=explanation, source=source, model=model, usage=usage)
    key = _cache_key(turn)
    if source == "model" and key is not None:  # only validated answers are remembered
        async with autocommit(turn.db) as conn:
            await cache.store(conn, key, msgspec.json.encode(answer).decode())
    return await _audit(turn, answer, reason), reason


def _response(
    turn: Turn, *, explanation: str, source: str, model: str | None, usage: Usage | None
) -> ExplanationResponse:
    facts, s = turn.facts, turn.facts.statement
    return ExplanationResponse(
        answer_id=str(turn.answer_id),
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
        locale=turn.locale,  # type: ignore[arg-type]  # checked by the request schema or the database
        source=source,  # type: ignore[arg-type]
        intent=turn.intent,
        prompt_version=PROMPT_VERSION,
        timings_ms=turn.stopwatch.snapshot(),
        model=model,
        usage=usage,
    )


async def _audit(turn: Turn, answer: ExplanationResponse, reason: str | None) -> ExplanationResponse:
    """Every answered request leaves a row (its own id: a cache hit repeats an earlier answer's id)."""
    stopwatch = turn.stopwatch
    ANSWERS.labels(source=answer.source).inc()
    answer = msgspec.structs.replace(answer, timings_ms=stopwatch.snapshot())
    with stopwatch.stage("audit"):
        async with autocommit(turn.db) as conn:
            await record_answer(
                conn,
                answer_id=turn.answer_id,
                tenant_id=turn.principal.tenant_id,
                account_id=turn.history.account_id,
                statement_id=turn.facts.statement.id,
                channel=turn.channel,
                question=turn.request.question,
                locale=answer.locale,
                answer_json=msgspec.json.encode(answer).decode(),
                source=answer.source,
                intent=answer.intent,
                prompt_version=answer.prompt_version,
                model=answer.model,
                usage_json=msgspec.json.encode(answer.usage).decode() if answer.usage else None,
                fallback_reason=reason,
                timings_json=msgspec.json.encode(answer.timings_ms).decode(),
                stage_starts_json=msgspec.json.encode(stopwatch.starts).decode(),
            )
    return msgspec.structs.replace(answer, timings_ms=stopwatch.snapshot())
