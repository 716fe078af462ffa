"""Asks the engine for a schema-constrained answer and reports what happened, never raising."""

from __future__ import annotations

import asyncio

import msgspec

from app.answers.schemas import Usage
from app.inference.engine import Engine, EngineError, Finished, GenerationRequest, TextDelta
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


class Outcome(msgspec.Struct, frozen=True):
    text: str | None  # the model's answer, not yet validated; None when there is none
    reason: str | None  # why there is none: engine_error, engine_timeout, invalid_json, truncated
    usage: Usage | None
    spec_accept_rate: float | None = None


async def ask_model(
    engine: Engine,
    prompt: RenderedPrompt,
    *,
    request_id: str,
    priority: int,
    max_tokens: int,
    timeout_s: float,
    stopwatch: Stopwatch,
) -> Outcome:
    request = GenerationRequest(
        request_id=request_id,
        prompt=prompt.text,
        max_tokens=max_tokens,
        stop=prompt.stop,
        json_schema=ANSWER_SCHEMA,
        priority=priority,
    )
    chunks: list[str] = []
    final: Finished | None = None

    async def consume() -> None:
        nonlocal final
        async for event in engine.generate(request):
            if isinstance(event, TextDelta):
                chunks.append(event.text)
            else:
                final = event

    try:
        with stopwatch.stage("engine"):
            # Timing out cancels the stream, and the engine aborts the request.
            await asyncio.wait_for(consume(), timeout_s)
    except TimeoutError:
        return Outcome(text=None, reason="engine_timeout", usage=None)
    except EngineError as exc:
        return Outcome(text=None, reason=f"engine_error:{str(exc)[:200]}", usage=None)
    assert final is not None  # an engine ends every stream with Finished
    stopwatch.stages["ttft"] = final.ttft_ms
    stopwatch.stages["decode"] = final.decode_ms
    if final.queue_ms is not None:
        stopwatch.stages["queue"] = final.queue_ms
    usage = Usage(final.prompt_tokens, final.cached_tokens, final.completion_tokens)
    spec = final.spec_accept_rate
    if final.finish_reason == "length":
        return Outcome(text=None, reason="truncated", usage=usage, spec_accept_rate=spec)
    try:
        answer = msgspec.json.decode("".join(chunks), type=ModelAnswer)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return Outcome(text=None, reason="invalid_json", usage=usage, spec_accept_rate=spec)
    return Outcome(text=answer.answer, reason=None, usage=usage, spec_accept_rate=spec)
