"""One generation unit: asks the engine for a plan, checks each claim as it arrives, says the
accepted ones, and ends with exactly one Outcome.

The plan's required claims (app/domain/answer_policy.py) are its prefilled beginning: they are
checked and said before the engine is asked, and the engine continues `{"claims": [...` under a
grammar (or, with nothing prefilled, writes the plan under a JSON schema) that admits only claims true
of the facts (app/domain/plan_schema.py). Each claim object is checked against the facts the moment
it closes; the claims are said (app/answers/realize.py) once the plan holds what it needs. A claim that
fails stops everything: the engine request is aborted and the Outcome carries the reason, so the
caller serves the deterministic answer instead; a plan that holds all it may stops the engine too, and
is served. Engine failures and timeouts become reasons, never exceptions."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator

import msgspec

from app.answers.plan_stream import ClaimSplitter
from app.answers.realize import Realizer
from app.answers.schemas import SaidClaim, Usage
from app.domain.claims import AnyClaim, Plan, decode_claim
from app.domain.knowledge import Passage
from app.domain.plan import PlanCheck
from app.domain.reasons import Reason, quoted
from app.errors import EngineError
from app.inference.drain import Drain
from app.inference.engine import Engine, Event, Finished, GenerationRequest, TextDelta
from app.metrics import CACHED_TOKENS_BY, COMPLETION_TOKENS_BY, PROMPT_TOKENS_BY, SPEC_ACCEPT_RATE
from app.timing import Stopwatch

ABORT_WAIT_S = 1.0  # how long an aborted engine request may take to report its tokens


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    text: str | None  # the accepted plan, said; None when there is none
    claims: list[SaidClaim] | None = None  # the claims said, resolved (with `text`)
    reason: Reason | None  # why there is none: the engine's failure, or the check the plan failed
    plan: list[AnyClaim] | None  # the claims the model wrote, as far as they could be read
    usage: Usage | None
    spec_accept_rate: float | None = None
    quoted: list[Passage] = []  # the bank's passages the said claims quote, in order


class _CutOff(Exception):
    """Put in a stream's queue at the drain deadline of a shutdown."""


class _Expired(Exception):
    """Put in a stream's queue when its time is up: one timer per answer, not one per event."""


# Engine streams run in tasks of their own (below); kept here until they end so none is collected.
_PRODUCERS: set[asyncio.Task[None]] = set()


async def generate(
    engine: Engine,
    request: GenerationRequest,
    *,
    check: PlanCheck,
    realizer: Realizer,
    timeout_s: float,
    stopwatch: Stopwatch,
    drain: Drain | None = None,
    tenant: str | None = None,
    prefill: str = "",
) -> AsyncGenerator[str | Outcome, None]:
    """The answer's text claim by claim, each only once checked, then exactly one Outcome. The
    claims of `prefill` (the plan's beginning the engine continues) are said first, before the engine
    is asked: the customer reads them while it prefills. Counts the engine's tokens under `tenant`
    (when given)."""
    splitter = ClaimSplitter()
    accepted: list[AnyClaim] = []
    said: list[SaidClaim] = []
    pieces: list[str] = []
    end: Finished | Reason | None = None
    full = False
    output: list[str] = [prefill]
    with stopwatch.stage("validate"):
        released, reason = _release(splitter.feed(prefill), accepted, said, check, realizer)
    for text in released:
        pieces.append(text)
        yield text
    if reason is None:  # the required claims were said: the engine adds the model's own
        raw = _engine_text(engine, request, timeout_s=timeout_s, stopwatch=stopwatch, drain=drain)
        async with contextlib.aclosing(raw):  # however this ends, an unfinished engine request is aborted
            async for item in raw:
                if not isinstance(item, str):
                    end = item
                    break
                output.append(item)
                with stopwatch.stage("validate"):
                    released, reason = _release(splitter.feed(item), accepted, said, check, realizer)
                for text in released:
                    pieces.append(text)
                    yield text
                # Stop here: the failed claim is never said; or the plan holds all it may (anything the
                # engine writes after it would be refused, and is not waited for).
                if reason is not None or (full := check.full()):
                    await engine.abort(request.request_id)
                    end = await _after_abort(raw)
                    break
    final = end if isinstance(end, Finished) else None
    if reason is None and not full:
        reason = end if isinstance(end, Reason) else _plan_reason(final, "".join(output), check)
    outcome = Outcome(
        text="".join(pieces) if reason is None else None,
        claims=said if reason is None else None,
        reason=reason,
        plan=accepted,
        # llama.cpp reports no tokens for a request stopped early: unknown, not 0
        usage=_usage(final) if final is not None and final.prompt_tokens else None,
        spec_accept_rate=final.spec_accept_rate if final is not None else None,
        quoted=[p for c in said for p in realizer.quoted(c.claim)] if reason is None else [],
    )
    if tenant is not None:
        _count_tokens(tenant, outcome)
    yield outcome


def _release(
    objects: list[str], accepted: list[AnyClaim], said: list[SaidClaim], check: PlanCheck, realizer: Realizer
) -> tuple[list[str], Reason | None]:
    """Checks the claims these JSON objects hold (adding them to `accepted`) and says those that may
    be said now (adding them to `said`): the texts, and the reason of the first that failed."""
    released: list[str] = []
    for text in objects:
        try:
            claim = decode_claim(text)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            return released, quoted("invalid_plan", str(exc))
        accepted.append(claim)  # a failed claim is audited with the plan, never said
        if (reason := check.check(claim)) is not None:
            return released, reason
        if not check.ready():
            continue  # held until the plan holds what its intent needs: the lead is said first
        for next_claim in check.to_say()[len(said) :]:
            resolved, reason = realizer.resolve(next_claim, said[-1].claim if said else None)
            if resolved is None:
                return released, reason
            said.append(resolved)
            released.append(realizer.joined(resolved, after=len(said) > 1))
    return released, None


def _plan_reason(final: Finished | None, output: str, check: PlanCheck) -> Reason | None:
    """Why the ended plan may not be served, if it may not: cut off, not a plan, or lacking a claim."""
    if final is None:
        return Reason(rule="engine_error", detail="stream_ended")
    if final.finish_reason == "length":
        return Reason(rule="truncated")
    try:
        msgspec.json.decode(output, type=Plan)
    except msgspec.ValidationError as exc:
        return quoted("invalid_plan", str(exc))
    except msgspec.DecodeError:
        return Reason(rule="invalid_json")
    return check.missing()


async def _after_abort(stream: AsyncIterator[str | Finished | Reason]) -> Finished | None:
    """The engine's last event once it was told to stop (its text is dropped); None if it does not
    come within ABORT_WAIT_S (closing the stream then cancels the request anyway)."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(ABORT_WAIT_S):
            async for item in stream:
                if isinstance(item, Finished):
                    return item
    return None


async def _engine_text(
    engine: Engine, request: GenerationRequest, *, timeout_s: float, stopwatch: Stopwatch, drain: Drain | None
) -> AsyncGenerator[str | Finished | Reason, None]:
    """The model's raw output as it is written, then its Finished event, or the Reason it failed.

    It ends after `timeout_s`, or at the drain deadline of a shutdown (`drain`), whichever comes
    first, as `engine_timeout` (detail "shutdown" for the latter).

    The engine's stream runs in a task of its own and hands events over a queue: however this
    generator ends (finished, timed out, or closed because the caller went away, even from inside
    another task group's cancellation), that task is cancelled and the engine aborts the request."""
    events: asyncio.Queue[Event | Exception] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for event in engine.generate(request):
                events.put_nowait(event)
        except Exception as exc:  # handed to the reader, which decides
            events.put_nowait(exc)

    producer = asyncio.get_running_loop().create_task(pump())
    _PRODUCERS.add(producer)
    producer.add_done_callback(_PRODUCERS.discard)
    unsubscribe = drain.subscribe(lambda: events.put_nowait(_CutOff())) if drain is not None else None
    timer = asyncio.get_running_loop().call_later(timeout_s, lambda: events.put_nowait(_Expired()))
    began = stopwatch.elapsed_ms()
    final: Finished | None = None
    try:
        with stopwatch.stage("engine"):
            while final is None:
                batch = [await events.get()]
                # The events that arrived meanwhile, in one pass: their text is handed on once.
                while not events.empty():
                    batch.append(events.get_nowait())
                text: list[str] = []
                for event in batch:
                    if isinstance(event, TextDelta):
                        text.append(event.text)
                        continue
                    if text:
                        yield "".join(text)
                        text = []
                    if isinstance(event, _Expired):
                        yield Reason(rule="engine_timeout")
                        return
                    if isinstance(event, _CutOff):
                        yield Reason(rule="engine_timeout", detail="shutdown")
                        return
                    if isinstance(event, EngineError):
                        yield quoted("engine_error", str(event))
                        return
                    if isinstance(event, Exception):
                        raise event
                    final = event
                    break
                if text:
                    yield "".join(text)
    finally:
        timer.cancel()
        producer.cancel()  # a no-op once the stream has ended
        if unsubscribe is not None:
            unsubscribe()
    stopwatch.record("ttft", began, final.ttft_ms)
    stopwatch.record("decode", began + final.ttft_ms, final.decode_ms)
    if final.queue_ms is not None:
        stopwatch.record("queue", began, final.queue_ms)
    yield final


def _usage(final: Finished) -> Usage:
    return Usage(
        prompt_tokens=final.prompt_tokens, cached_tokens=final.cached_tokens, completion_tokens=final.completion_tokens
    )


def _count_tokens(tenant: str, outcome: Outcome) -> None:
    if (usage := outcome.usage) is not None:
        PROMPT_TOKENS_BY(tenant).inc(usage.prompt_tokens)
        CACHED_TOKENS_BY(tenant).inc(usage.cached_tokens)
        COMPLETION_TOKENS_BY(tenant).inc(usage.completion_tokens)
    if outcome.spec_accept_rate is not None:
        SPEC_ACCEPT_RATE.observe(outcome.spec_accept_rate)
