"""The answer service: the straight line from a question to an audited answer.

admission -> records and facts, the bank's passages that fit, what the question is about (app/answers/turns.py;
the model's choice where rules cannot: app/answers/intent_choice.py), or a cached answer -> prompt -> plan, each
claim checked and said (app/answers/generation.py) -> cache -> audit (the deterministic text only when
the plan is not served)

Built once per process (the app's lifespan, the CLI, the batch worker) around the collaborators
that outlive a request: the database, the engine, the admission scheduler and the settings.
`converse` gives an answer as events, for the people who wait for it (chat widget, console): the
facts first, then the text claim by claim as the model plans it, then the audited answer (or the
deterministic text that replaces it); `explain` gives its last event, the whole answer (JSON API, batch)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field

import msgspec
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from app.answers import cache
from app.answers.generation import Outcome, generate
from app.answers.intent_choice import settle_intent
from app.answers.messages import Ask, ChatEvent, Delta, Facts, Final, Replace, Turn, final_answer, respond
from app.answers.planning import plan_job
from app.answers.realize import sources
from app.answers.schemas import ExplanationRequest, ExplanationResponse
from app.answers.turns import (
    asks_model,
    deterministic_quotes,
    deterministic_text,
    read_turn,
    said_before,
    step_of,
    took_of,
    unasked_rule,
)
from app.data.audit import AuditRow, record_answer
from app.data.connecting import driver_options
from app.data.database import autocommit
from app.data.driver_pool import DriverPool
from app.data.tenants import Principal, principal_for
from app.domain.priority import QUEUE_DEADLINE_S, effective_level, fill_budget
from app.domain.reasons import Reason
from app.domain.vocabulary import Source
from app.errors import Shed
from app.inference.engine import Engine
from app.inference.factory import build_engine
from app.inference.scheduler import Hooks, Ledger, Scheduler
from app.locales import CANONICAL_QUESTIONS
from app.metrics import ANSWER_FIRST_TEXT_BY, ANSWER_SECONDS_BY, ANSWERS_BY, CACHE_LOOKUPS_BY, FALLBACKS_BY
from app.settings import Settings

log = structlog.get_logger("bill_assistant.answers")
_decode_answer = msgspec.json.Decoder(ExplanationResponse).decode


@dataclass(frozen=True, slots=True, kw_only=True)
class AnswerService:
    db: AsyncEngine
    pool: DriverPool  # the history and audit statements every answer runs
    llm: Engine | None  # None: deterministic answers only (ENGINE=off)
    scheduler: Scheduler
    settings: Settings
    # Canonical answers being generated after a miss, by cache key (app/answers/cache.py).
    _filling: dict[cache.CacheKey, asyncio.Task[None]] = field(default_factory=dict, init=False, repr=False)

    @classmethod
    def build(
        cls, db: AsyncEngine, settings: Settings, hooks: Hooks | None = None, ledger: Ledger | None = None
    ) -> AnswerService:
        """The configured engine (a model load) and a scheduler of its capacity (shared via `ledger`)."""
        scheduler = Scheduler(capacity=settings.admission.capacity, hooks=hooks or Hooks(), ledger=ledger)
        url = db.url.render_as_string(hide_password=False)
        pool = DriverPool(url, size=settings.database.pool_size, options=driver_options(settings))
        return cls(db=db, pool=pool, llm=build_engine(settings), scheduler=scheduler, settings=settings)

    async def tenant(self, tenant_id: int) -> Principal | None:
        """A tenant as the caller of work it asked for earlier (batch jobs, precomputation, console)."""
        async with autocommit(self.db) as conn:
            return await principal_for(conn, tenant_id)

    async def explain(self, ask: Ask) -> ExplanationResponse:
        """The whole answer at once (JSON API, batch): `converse`'s last event."""
        return await final_answer(self.converse(ask))

    async def converse(self, ask: Ask) -> AsyncIterator[ChatEvent]:
        """The answer as events: the facts, the text as it is written, the audited answer.

        Admission is held until the generator ends: run it to its first event before answering, so
        that shedding and NotFound still become HTTP statuses. Times the first text and the whole
        answer from the request's arrival (`bill_assistant_answer_*_seconds`)."""
        tenant, channel, watch = ask.principal.tenant_slug, ask.channel, ask.stopwatch
        first_text = True
        async with aclosing(self._converse(ask)) as events:  # closing this closes the answer
            async for event in events:
                if first_text and (isinstance(event, Replace) or (isinstance(event, Delta) and event.text)):
                    first_text = False
                    ANSWER_FIRST_TEXT_BY(tenant, channel).observe(watch.elapsed_ms() / 1000)
                elif isinstance(event, Final):
                    ANSWER_SECONDS_BY(tenant, channel, event.answer.source).observe(watch.elapsed_ms() / 1000)
                yield event

    async def _converse(self, ask: Ask) -> AsyncGenerator[ChatEvent, None]:
        async with self._admitted(ask) as level:
            turn = await settle_intent(self.llm, await read_turn(self.pool, ask, level), self.settings)
            took = took_of(turn)
            hit = await self._cached(turn)
            if hit is not None:  # audited as it was found
                yield Facts(msgspec.structs.replace(hit, explanation=""))
                yield Delta(hit.explanation)
                yield Final(hit)
                return
            yield Facts(respond(turn, explanation="", source="fallback", model=None, usage=None))
            if took:
                yield Delta(took)
            if ask.use_cache and ask.origin != "fill":
                self._fill_cache_later(turn)
            if self.llm is not None and asks_model(turn):
                outcome = None
                async with aclosing(self._generate(turn)) as stream:
                    async for item in stream:
                        if isinstance(item, Outcome):
                            outcome = item
                        else:
                            yield Delta(item)
                answer, reason = await self._conclude(turn, outcome, took)
                if reason is not None:
                    yield Replace(text=answer.explanation, reason=reason)
            else:
                answer, _ = await self._conclude(turn, None, took)
                yield Delta(answer.explanation.removeprefix(took))
            yield Final(answer)

    @asynccontextmanager
    async def _admitted(self, ask: Ask) -> AsyncIterator[int]:
        """Admission (rate, priority, fairness, deadline) for as long as the answer takes; the level."""
        principal, stopwatch = ask.principal, ask.stopwatch
        level = effective_level(principal.priority_class, ask.channel)
        deadline_s = QUEUE_DEADLINE_S[ask.channel] * self.settings.admission.queue_deadline_scale
        fill = fill_budget(self.settings.cache.fill_slots, self.settings.cache.fill_rate_per_s)
        tenant, limits = fill if ask.origin == "fill" else (principal.tenant_slug, principal.limits)
        async with self.scheduler.admit(tenant, limits, level, deadline_s) as ticket:
            wait_ms = ticket.wait_s * 1000
            stopwatch.record("admission", stopwatch.elapsed_ms() - wait_ms, wait_ms)
            yield level

    async def _cached(self, turn: Turn) -> ExplanationResponse | None:
        """The validated answer cached for these very facts (app/answers/cache.py), audited as it
        is found; the original answer, its id included, with this request's as-of date and timings."""
        ask = turn.ask
        key = cache.key(turn, self.llm) if ask.use_cache and ask.origin != "fill" else None
        if key is None:
            return None
        with ask.stopwatch.stage("cache"):
            served = await cache.find(self.pool, turn, key)
        CACHE_LOOKUPS_BY(ask.principal.tenant_slug, turn.intent, "miss" if served is None else "hit").inc()
        if served is None:
            return None
        ANSWERS_BY("cache").inc()
        return msgspec.structs.replace(_decode_answer(served), timings_ms=ask.stopwatch.snapshot())

    def _fill_cache_later(self, turn: Turn) -> None:
        """After a miss, answer the intent's canonical question about this statement at batch
        priority (behind every person), so that the next question of that intent is a cache hit.
        At most one such answer per key at a time; shed or failed, it is simply not cached."""
        key = cache.key(turn, self.llm)
        if key is None or key in self._filling or not self.settings.cache.fill_after_miss:
            return
        request = ExplanationRequest(
            account_ref=turn.facts.account_ref,
            question=CANONICAL_QUESTIONS[turn.intent][turn.locale],
            statement_period_end=turn.facts.statement.period_end,
            as_of=turn.as_of,
            locale=turn.locale,
            channel="batch",
        )
        ask = Ask(principal=turn.ask.principal, request=request, channel="batch", today=turn.as_of, origin="fill")
        task = asyncio.get_running_loop().create_task(self._fill(ask))
        self._filling[key] = task
        task.add_done_callback(lambda _: self._filling.pop(key, None))

    @property
    def filling(self) -> int:
        """How many canonical answers are being generated now."""
        return len(self._filling)

    async def _fill(self, ask: Ask) -> None:
        try:
            await self.explain(ask)
        except Shed:
            pass  # the engine is busy with people: the next miss queues it again
        except Exception:  # never the asking customer's problem; logged for the operator
            log.exception("canonical answer failed", tenant=ask.principal.tenant_slug, account=ask.request.account_ref)

    def _generate(self, turn: Turn) -> AsyncGenerator[str | Outcome, None]:
        """The model's plan for this turn, checked and said claim by claim (app/answers/generation.py)."""
        assert self.llm is not None
        ask = turn.ask
        with ask.stopwatch.stage("prompt"):
            job = plan_job(
                facts=turn.facts,
                intent=turn.intent,
                question=ask.request.question,
                focus=set(turn.reading.subjects) or None,
                previous_question=ask.thread.previous_question if ask.thread else None,
                reading=turn.reading,
                said=said_before(turn),
                quotes=turn.quotes,
                locale=turn.locale,
                policy=ask.principal.policy,
                chat_template=self.settings.engine.chat_template,
                request_id=ask.audit_id.hex,
                priority=turn.level,
                max_tokens=self.settings.engine.max_tokens,
                layout=self.settings.engine.prompt_layout,
                chat=ask.channel == "widget",
            )
        return generate(
            self.llm,
            job.request,
            check=job.check,
            realizer=job.realizer,
            timeout_s=self.settings.engine.timeout_s,
            stopwatch=ask.stopwatch,
            drain=self.scheduler.drain,
            tenant=ask.principal.tenant_slug,
            prefill=job.prefill,
        )

    async def _conclude(
        self, turn: Turn, outcome: Outcome | None, took: str = ""
    ) -> tuple[ExplanationResponse, Reason | None]:
        """Serve the model's checked plan, said, or the deterministic text (rendered only then), after
        what a follow-up was taken to be; cache a canonical answer; audit. The answer, and why it
        is not the model's (None: it is)."""
        explanation, model, usage, plan, claims, quoted = None, None, None, None, None, deterministic_quotes(turn)
        source: Source = "fallback"
        step = step_of(turn)
        if outcome is None:
            reason: Reason | None = Reason(rule=unasked_rule(turn, step))
        else:
            assert self.llm is not None
            model, usage, reason, plan = self.llm.model, outcome.usage, outcome.reason, outcome.plan
            if outcome.text is not None and reason is None:
                explanation, source, claims, quoted = outcome.text, "model", outcome.claims, outcome.quoted
        if reason is not None:
            FALLBACKS_BY(reason.rule).inc()
        if explanation is None:
            explanation = deterministic_text(turn)
        answer = respond(
            turn,
            explanation=took + explanation,
            source=source,
            model=model,
            usage=usage,
            plan=plan,
            claims=claims,
            choices=list(turn.reading.choices) if step == "clarify" else None,
            handover=None if step is None or step == "clarify" else step,
            sources=sources(quoted),
        )
        key = cache.key(turn, self.llm)
        if source == "model" and turn.ask.origin == "fill" and key is not None:  # checked canonical answers only
            await cache.keep(self.db, turn, key, msgspec.json.encode(answer).decode())
        return await self._audit(turn, answer, reason), reason

    async def _audit(self, turn: Turn, answer: ExplanationResponse, reason: Reason | None) -> ExplanationResponse:
        """Every answered request leaves a row (its own id: a cache hit repeats an earlier answer's id)."""
        ask, stopwatch = turn.ask, turn.ask.stopwatch
        ANSWERS_BY(answer.source).inc()
        answer = msgspec.structs.replace(answer, timings_ms=stopwatch.snapshot())
        row = AuditRow(
            id=ask.audit_id,
            tenant_id=ask.principal.tenant_id,
            account_id=turn.history.account_id,
            statement_id=turn.facts.statement.id,
            channel=ask.channel,
            origin=ask.origin,
            question=ask.request.question,
            locale=answer.locale,
            answer=msgspec.json.encode(answer).decode(),
            source=answer.source,
            intent=answer.intent,
            prompt_version=answer.prompt_version,
            model=answer.model,
            usage=msgspec.json.encode(answer.usage).decode() if answer.usage else None,
            fallback_reason=str(reason) if reason is not None else None,
            timings=msgspec.json.encode(answer.timings_ms).decode(),
            stage_starts=msgspec.json.encode(stopwatch.starts).decode(),
        )
        with stopwatch.stage("audit"):
            async with self.pool.connection() as conn:
                await record_answer(conn, row)
        return msgspec.structs.replace(answer, timings_ms=stopwatch.snapshot())
