"""Client of an SGLang server's native API (`POST /generate`, SSE), as in DESIGN.md's SGLang section.

Streaming text is cumulative unless the server runs with --incremental-streaming-output; errors can
arrive mid-stream as `data: {"error": ...}`; the stream ends with `data: [DONE]`. A request whose
consumer goes away is aborted with `POST /abort_request`, so the GPU stops working for nobody.

Behind SGLang's model gateway (smg), which has no `/abort_request` (it answers 404), `abort` closes
the request's stream instead: smg passes the disconnect on to the worker, and SGLang aborts a request
whose client went away. The stream then ends as aborted, with the usage of its last event.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from time import perf_counter
from typing import Any

import msgspec

from app.domain.priority import sglang_priority
from app.errors import EngineError
from app.inference.engine import Event, Finished, GenerationRequest, TextDelta, engine_error
from app.inference.http import HTTPClient, HTTPError, Response

CONTROL_TIMEOUT_S = 3.0  # /abort_request and /health


class _Meta(msgspec.Struct):
    """The parts of `meta_info` the client reads; the rest is skipped while decoding."""

    finish_reason: Any = None
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    queue_time: Any = None
    spec_accept_rate: float | None = None
    spec_accept_length: float | None = None


class _Event(msgspec.Struct):
    text: str = ""
    meta_info: _Meta | None = None
    error: Any = None


_decode_event = msgspec.json.Decoder(_Event).decode


def _ms(seconds: Any) -> float | None:
    return float(seconds) * 1000 if isinstance(seconds, int | float) else None


class SGLangEngine:
    name = "sglang"

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        model: str = "sglang",
        profile: str = "",
        incremental: bool = False,
        timeout_s: float = 60.0,  # the longest one answer may take, connecting included
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.model = model
        self.profile = f"sglang:{model}" + (f":{profile}" if profile else "")
        self._incremental = incremental
        self._timeout_s = timeout_s
        self._client = HTTPClient(base_url, headers=headers, connect_timeout_s=3.0)
        self._pending_aborts: set[asyncio.Task[None]] = set()
        self._open: dict[str, Response] = {}  # the streams being read, by request id
        self._hung_up: set[str] = set()  # streams that abort() closed (a gateway in front)

    def _body(self, request: GenerationRequest) -> dict[str, Any]:
        sampling: dict[str, Any] = {"max_new_tokens": request.max_tokens, "temperature": request.temperature}
        if request.stop:
            sampling["stop"] = request.stop
        if request.json_schema is not None:
            sampling["json_schema"] = msgspec.json.encode(request.json_schema).decode()  # SGLang wants a string
        elif request.grammar is not None:  # a continuation of a prefilled plan: xgrammar's EBNF takes GBNF
            sampling["ebnf"] = request.grammar
        return {
            "text": request.prompt,
            "sampling_params": sampling,
            "stream": True,
            "rid": request.request_id,
            "priority": sglang_priority(request.priority),  # the level, spread for SGLang's preemption rule
        }

    async def generate(self, request: GenerationRequest) -> AsyncIterator[Event]:
        started = perf_counter()
        first: float | None = None
        text = ""
        meta: _Meta | None = None
        done = False
        rid = request.request_id
        body = msgspec.json.encode(self._body(request))
        try:
            async with self._client.stream("POST", "/generate", body, timeout_s=self._timeout_s) as response:
                self._open[rid] = response
                if response.status != 200:
                    detail = (await response.read())[:300].decode(errors="replace")
                    raise EngineError(f"sglang answered {response.status}: {detail}")
                pending = b""  # a line not yet ended
                async for chunk in response.chunks():
                    if done:  # read on to the end of the body, so the connection is kept for the next answer
                        continue
                    *lines, pending = (pending + chunk).split(b"\n")
                    added = ""  # the events that came together are handed on as one delta
                    for line in lines:
                        if not line.startswith(b"data:"):
                            continue  # blank lines between events, comments, other fields
                        data = line[5:].strip()
                        if data == b"[DONE]":
                            done = True
                            break
                        event = _decode_event(data)
                        if event.error is not None:
                            raise engine_error("sglang", event.error)
                        chunk_text = event.text
                        delta = chunk_text if self._incremental else chunk_text[len(text) :]
                        text = text + delta if self._incremental else chunk_text
                        meta = event.meta_info or meta
                        if delta and first is None:
                            first = perf_counter()
                        added += delta
                    if added:
                        yield TextDelta(added)
            if not done:
                raise EngineError("sglang: the stream ended without [DONE]")
        except HTTPError as exc:
            if rid not in self._hung_up:
                raise EngineError(f"sglang unreachable: {exc}") from exc
            if not done:  # abort() closed it mid-answer: the worker saw the disconnect
                done = True
                meta = msgspec.structs.replace(meta or _Meta(), finish_reason={"type": "abort"})
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise EngineError(f"sglang sent an unreadable event: {exc}") from exc
        finally:
            self._open.pop(rid, None)
            self._hung_up.discard(rid)
            if not done:
                # Cancelled, timed out or failed: make sure the server stops generating. In the
                # background, so a cancelled caller is not held up by it.
                task = asyncio.get_running_loop().create_task(self.abort(request.request_id))
                self._pending_aborts.add(task)
                task.add_done_callback(self._pending_aborts.discard)
        ended = perf_counter()
        meta = meta or _Meta()
        finish = meta.finish_reason or {}
        yield Finished(
            finish_reason=finish.get("type", "stop") if isinstance(finish, dict) else str(finish),
            prompt_tokens=meta.prompt_tokens,
            cached_tokens=meta.cached_tokens,
            completion_tokens=meta.completion_tokens,
            ttft_ms=((first or ended) - started) * 1000,
            decode_ms=(ended - (first or ended)) * 1000,
            queue_ms=_ms(meta.queue_time),
            spec_accept_rate=meta.spec_accept_rate,
            spec_accept_length=meta.spec_accept_length,
        )

    async def abort(self, request_id: str) -> None:
        # Best effort: SGLang also drops a request whose client disconnected.
        with contextlib.suppress(HTTPError):
            body = msgspec.json.encode({"rid": request_id})
            status, _ = await self._client.request("POST", "/abort_request", body, timeout_s=CONTROL_TIMEOUT_S)
            if status == 404 and (stream := self._open.get(request_id)) is not None:
                # No such route: a gateway (smg) is in front. Hang up; it passes the disconnect on.
                self._hung_up.add(request_id)
                stream.close()

    async def health(self) -> bool:
        try:
            status, _ = await self._client.request("GET", "/health", timeout_s=CONTROL_TIMEOUT_S)
        except HTTPError:
            return False
        return status == 200

    async def close(self) -> None:
        if self._pending_aborts:
            await asyncio.gather(*self._pending_aborts, return_exceptions=True)
        await self._client.close()
