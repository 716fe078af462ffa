"""The engine interface. Everything above it is engine-agnostic."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol, runtime_checkable

import msgspec

from app.errors import EngineError


class GenerationRequest(msgspec.Struct, frozen=True, kw_only=True):
    request_id: str
    prompt: str  # already rendered with the model family's chat template
    max_tokens: int = 256
    temperature: float = 0.0
    stop: list[str] = []
    json_schema: dict[str, Any] | None = None  # constrain the output to this JSON schema
    # The same constraint as a GBNF grammar, for an engine that takes one (llama.cpp: compact JSON,
    # where its own conversion of the schema lets a small model write whitespace without end).
    grammar: str | None = None
    priority: int = 0  # the admission level, 0..3 (app/domain/priority.py); higher is more important


class TextDelta(msgspec.Struct, frozen=True):
    text: str


class Finished(msgspec.Struct, frozen=True, kw_only=True):
    finish_reason: str  # stop | length | abort
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    ttft_ms: float  # from submission to the first token, as the caller saw it
    decode_ms: float  # from the first token to the last
    queue_ms: float | None = None  # where the engine reports it
    spec_accept_rate: float | None = None  # speculative decoding, where the engine reports it
    spec_accept_length: float | None = None


Event = TextDelta | Finished


def engine_error(engine: str, error: Any) -> EngineError:
    """An error the engine reported mid-stream, as an EngineError naming the engine."""
    message = error.get("message", error) if isinstance(error, dict) else error
    return EngineError(f"{engine}: {message}")


@runtime_checkable
class Engine(Protocol):
    name: str  # "embedded" | "sglang"
    model: str  # the model's label, in responses and audit rows
    # What the answers depend on beyond the model's label: its quantization, the engine and its build.
    # Part of the answer cache's key, so another engine's answers are never served from it.
    profile: str

    def generate(self, request: GenerationRequest) -> AsyncIterator[Event]:
        """Text deltas, then exactly one Finished. Cancelling the iteration aborts the request."""
        ...

    async def abort(self, request_id: str) -> None: ...

    async def health(self) -> bool: ...

    async def close(self) -> None: ...
