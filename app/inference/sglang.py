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

import httpx
import msgspec

from app.domain.priority import sglang_priority
from app.errors import EngineError
from app.inference.engine import Event, Finished, GenerationRequest, TextDelta, engine_error


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
        timeout_s: float = 60.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.model = model
        self.profile = f"sglang:{model}" + (f":{profile}" if profile else "")
        self._incremental = incremental
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=3.0),
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
            transport=transport,
        )
        self._pending_aborts: set[asyncio.Task[None]] = set()
        self._open: dict[str, httpx.Response] = {}  # the streams being read, by request id
        self._hung_up: set[str] = set()  # streams that abort() closed (a gateway in front)

    def _body(self, request: GenerationRequest) -> dict[str, Any]:
        sampling: dict[str, Any] = {"max_new_tokens": request.max_tokens, "temperature": request.temperature}
        if request.stop:
            sampling["stop"] = request.stop
        if request.json_schema is not None:
            sampling["json_schema"] = msgspec.json.encode(request.json_schema).decode()  # SGLang wants a string
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
        meta: dict[str, Any] = {}
        done = False
        rid = request.request_id
        try:
            async with self._client.stream("POST", "/generate", json=self._body(request)) as response:
                self._open[rid] = response
                if response.status_code != 200:
                    detail = (await response.aread())[:300].decode(errors="replace")
                    raise EngineError(f"sglang answered {response.status_code}: {detail}")
                async for line in response.aiter_lines():
                    if done or not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        # Read on to the end of the body: a response read whole lets httpx keep the
                        # connection for the next request instead of opening a new one per answer.
                        done = True
                        continue
                    event = msgspec.json.decode(data)
                    if "error" in event:
                        raise engine_error("sglang", event["error"])
                    chunk = event.get("text", "")
                    delta = chunk if self._incremental else chunk[len(text) :]
                    text = text + delta if self._incremental else chunk
                    meta = event.get("meta_info") or meta
                    if delta:
                        if first is None:
                            first = perf_counter()
                        yield TextDelta(delta)
            if not done:
                raise EngineError("sglang: the stream ended without [DONE]")
        except (httpx.HTTPError, httpx.StreamError) as exc:
            if rid not in self._hung_up:
                raise EngineError(f"sglang unreachable: {type(exc).__name__}: {exc}") from exc
            if not done:  # abort() closed it mid-answer: the worker saw the disconnect
                done = True
                meta = {**meta, "finish_reason": {"type": "abort"}}
        except msgspec.DecodeError as exc:
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
        finish = meta.get("finish_reason") or {}
        yield Finished(
            finish_reason=finish.get("type", "stop") if isinstance(finish, dict) else str(finish),
            prompt_tokens=int(meta.get("prompt_tokens", 0)),
            cached_tokens=int(meta.get("cached_tokens", 0)),
            completion_tokens=int(meta.get("completion_tokens", 0)),
            ttft_ms=((first or ended) - started) * 1000,
            decode_ms=(ended - (first or ended)) * 1000,
            queue_ms=_ms(meta.get("queue_time")),
            spec_accept_rate=meta.get("spec_accept_rate"),
            spec_accept_length=meta.get("spec_accept_length"),
        )

    async def abort(self, request_id: str) -> None:
        # Best effort: SGLang also drops a request whose client disconnected.
        with contextlib.suppress(httpx.HTTPError):
            answer = await self._client.post("/abort_request", json={"rid": request_id}, timeout=3.0)
            if answer.status_code == 404 and (stream := self._open.get(request_id)) is not None:
                # No such route: a gateway (smg) is in front. Hang up; it passes the disconnect on.
                self._hung_up.add(request_id)
                await stream.aclose()

    async def health(self) -> bool:
        try:
            return (await self._client.get("/health", timeout=3.0)).status_code == 200
        except httpx.HTTPError:
            return False

    async def close(self) -> None:
        if self._pending_aborts:
            await asyncio.gather(*self._pending_aborts, return_exceptions=True)
        await self._client.aclose()
