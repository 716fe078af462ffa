"""Asks the engine for a schema-constrained answer, streams its text, and reports what happened;
engine failures and timeouts become reasons, never exceptions."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import msgspec

from app.answers.schemas import Usage
from app.answers.streaming import AnswerTextDecoder
from app.domain.reasons import Reason
from app.errors import EngineError
from app.inference.engine import Engine, Event, Finished, GenerationRequest, TextDelta
from app.inference.scheduler import Drain
from app.prompts import RenderedPrompt
from app.timing import Stopwatch

# Bounded strings and no extra keys: a small model otherwise writes until the token limit.
ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "minLength": 1, "maxLength": 400}},
    "required": ["answer"],
    "additionalProperties": False,
}


class ModelAnswer(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    answer: str


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    text: str | None  # the model's answer, not yet validated; None when there is none
    reason: Reason | None  # why there is none: engine_error, engine_timeout, invalid_json, truncated
    usage: Usage | None
    spec_accept_rate: float | None = None


class _CutOff(Exception):
    """Put in a stream's queue at the drain deadline of a shutdown."""


class _Expired(Exception):
    """Put in a stream's queue when its time is up: one timer per answer, not one per event."""


# Engine streams run in tasks of their own (below); kept here until they end so none is collected.
_PRODUCERS: set[asyncio.Task[None]] = set()


def answer_request(prompt: RenderedPrompt, *, request_id: str, priority: int, max_tokens: int) -> GenerationRequest:
    return GenerationRequest(
        request_id=request_id,
        prompt=prompt.text,
        max_tokens=max_tokens,
        stop=prompt.stop,
        json_schema=ANSWER_SCHEMA,
        priority=priority,
    )


async def stream_model(
    engine: Engine, request: GenerationRequest, *, timeout_s: float, stopwatch: Stopwatch, drain: Drain | None = None
) -> AsyncGenerator[str | Outcome, None]:
    """The answer's text as the model writes it, then exactly one Outcome.

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
    chunks: list[str] = []
    decoder = AnswerTextDecoder()
    final: Finished | None = None
    try:
        with stopwatch.stage("engine"):
            while final is None:
                batch = [await events.get()]
                # The events that arrived meanwhile, in one pass: the text they add is decoded and
                # handed on (to the sentence gate) once, not once per token.
                while not events.empty():
                    batch.append(events.get_nowait())
                fed = len(chunks)
                for event in batch:
                    if isinstance(event, TextDelta):
                        chunks.append(event.text)
                        continue
                    if len(chunks) > fed and (text := decoder.feed("".join(chunks[fed:]))):
                        yield text
                    fed = len(chunks)
                    if isinstance(event, _Expired):
                        yield Outcome(text=None, reason=Reason(rule="engine_timeout"), usage=None)
                        return
                    if isinstance(event, _CutOff):
                        yield Outcome(text=None, reason=Reason(rule="engine_timeout", detail="shutdown"), usage=None)
                        return
                    if isinstance(event, EngineError):
                        detail = str(event)[:200]
                        yield Outcome(text=None, reason=Reason(rule="engine_error", detail=detail), usage=None)
                        return
                    if isinstance(event, Exception):
                        raise event
                    final = event
                    break
                if len(chunks) > fed and (text := decoder.feed("".join(chunks[fed:]))):
                    yield text
    finally:
        timer.cancel()
        producer.cancel()  # a no-op once the stream has ended
        if unsubscribe is not None:
            unsubscribe()
    stopwatch.record("ttft", began, final.ttft_ms)
    stopwatch.record("decode", began + final.ttft_ms, final.decode_ms)
    if final.queue_ms is not None:
        stopwatch.record("queue", began, final.queue_ms)
    yield _outcome(final, "".join(chunks))


def _outcome(final: Finished, output: str) -> Outcome:
    usage = Usage(
        prompt_tokens=final.prompt_tokens, cached_tokens=final.cached_tokens, completion_tokens=final.completion_tokens
    )
    spec = final.spec_accept_rate
    if final.finish_reason == "length":
        return Outcome(text=None, reason=Reason(rule="truncated"), usage=usage, spec_accept_rate=spec)
    try:
        answer = msgspec.json.decode(output, type=ModelAnswer)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return Outcome(text=None, reason=Reason(rule="invalid_json"), usage=usage, spec_accept_rate=spec)
    return Outcome(text=answer.answer, reason=None, usage=usage, spec_accept_rate=spec)
