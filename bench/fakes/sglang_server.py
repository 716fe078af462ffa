"""A fake SGLang server that speaks the native API exactly as DESIGN.md describes it (sglang 0.5.x).

- POST /generate: `text`, `sampling_params` (unknown keys refused with 400; `json_schema` must be a
  JSON *string*), `stream`, `rid`, `priority` (int). Streaming is SSE `data: {...}` with cumulative
  `text` and `meta_info`, ending with `data: [DONE]`; a scripted failure arrives mid-stream as
  `data: {"error": {...}}`. `meta_info` carries id, finish_reason {type: stop|length|abort},
  prompt/completion/cached tokens, e2e_latency, queue_time, first_token_latency and, when
  speculative decoding is on, spec_accept_rate/spec_accept_length/spec_verify_ct.
- `--api-key`: with one set, a request without `Authorization: Bearer <key>` gets 401.
- Prefix cache: cached_tokens is the longest token prefix shared with an earlier prompt (a radix cache).
- Scripts: queued ones (`scripts`) answer the next requests in turn; `answer_for` picks one by the
  prompt (the key-field gate's tests script a profile per golden case); otherwise `default`.
- /flush_cache empties the prefix cache (SGLang answers it once no request is running).
- POST /abort_request {rid}: the stream ends with finish_reason abort. A client that disconnects
  mid-stream is an abort too (SGLang aborts a request whose client went away): generation stops and
  the rid is in `disconnected`. /health, /health_generate, /model_info, /server_info.

It runs as a real HTTP server (uvicorn on a free loopback port) so the client is tested over the wire.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.fakes.server import ThreadedServer

SAMPLING_KEYS = {
    "max_new_tokens", "min_new_tokens", "temperature", "top_p", "top_k", "min_p", "frequency_penalty",
    "presence_penalty", "repetition_penalty", "stop", "stop_token_ids", "ignore_eos", "skip_special_tokens",
    "spaces_between_special_tokens", "no_stop_trim", "regex", "ebnf", "json_schema", "n", "custom_params",
    "stream_interval", "logit_bias",
}  # fmt: skip
PLAN_START = '{"claims": ['
TOKEN = re.compile(r"\w+|[^\w\s]|\s+")


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


@dataclass(kw_only=True)
class Script:
    """What the next /generate answers."""

    text: str = '{"claims": [{"claim": "period"}]}'  # a plan; a test scripts the one its facts need
    error_after: int | None = None  # send an error event after this many tokens
    status: int = 200  # refuse the request with this HTTP status
    hang_s: float = 0.0  # wait this long before the first token (timeouts)
    token_delay_s: float = 0.002


@dataclass(kw_only=True)
class FakeSGLang:
    default: Script = field(default_factory=Script)
    scripts: deque[Script] = field(default_factory=deque)
    # Picks the answer by the prompt (when no queued script is left); None from it: the default.
    answer_for: Callable[[str], Script | None] | None = None
    speculative: bool = False
    api_key: str | None = None  # like --api-key: every route then needs "Authorization: Bearer <key>"
    requests: list[dict[str, Any]] = field(default_factory=list)
    aborted: set[str] = field(default_factory=set)
    disconnected: set[str] = field(default_factory=set)
    # The client's (host, port) of each /generate: one port for many requests is one kept-alive connection.
    connections: list[tuple[str, int]] = field(default_factory=list)
    flushes: int = 0  # POST /flush_cache calls
    _prompts: list[list[str]] = field(default_factory=list)

    def cached_tokens(self, prompt: list[str]) -> int:
        best = 0
        for seen in self._prompts:
            n = 0
            for a, b in zip(seen, prompt, strict=False):
                if a != b:
                    break
                n += 1
            best = max(best, n)
        return best

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path, method = scope["path"], scope["method"]
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = dict(scope["headers"])
        if self.api_key and headers.get(b"authorization") != f"Bearer {self.api_key}".encode():
            return await _json(send, 401, {"error": {"message": "Unauthorized"}})
        if method == "GET" and path in ("/health", "/health_generate"):
            return await _json(send, 200, {})
        if method == "GET" and path in ("/model_info", "/server_info"):
            return await _json(send, 200, {"model_path": "fake/model", "is_generation": True})
        if method in ("GET", "POST") and path == "/flush_cache":  # empties the radix cache
            self._prompts.clear()
            self.flushes += 1
            return await _json(send, 200, {})
        if method == "POST" and path == "/abort_request":
            self.aborted.add(json.loads(body)["rid"])
            return await _json(send, 200, {})
        if method == "POST" and path == "/generate":
            self.connections.append(tuple(scope["client"]))
            return await self._generate(json.loads(body), receive, send)
        await _json(send, 404, {"detail": "Not Found"})

    async def _generate(self, request: dict[str, Any], receive: Any, send: Any) -> None:
        self.requests.append(request)
        chosen = self.answer_for(str(request.get("text", ""))) if self.answer_for and not self.scripts else None
        script = self.scripts.popleft() if self.scripts else chosen or self.default
        problem = _check(request)
        if problem:
            return await _json(send, 400, {"error": {"message": problem}})
        if script.status != 200:
            return await _json(send, script.status, {"error": {"message": "scripted failure"}})
        rid = request.get("rid") or f"rid-{len(self.requests)}"
        prompt = tokens(request["text"])
        cached = self.cached_tokens(prompt)
        self._prompts.append(prompt)
        params = request.get("sampling_params", {})
        output = tokens(continuation(request["text"], script.text))
        limit = params.get("max_new_tokens", 128)
        finish = "length" if len(output) > limit else "stop"
        output = output[:limit]

        gone = asyncio.Event()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()
            self.disconnected.add(rid)

        watcher = asyncio.create_task(watch())
        started = time.perf_counter()

        def meta(n: int, reason: str | None) -> dict[str, Any]:
            info: dict[str, Any] = {
                "id": rid, "finish_reason": {"type": reason} if reason else None,
                "prompt_tokens": len(prompt), "completion_tokens": n, "cached_tokens": cached,
                "e2e_latency": time.perf_counter() - started, "queue_time": 0.0005, "first_token_latency": 0.001,
            }  # fmt: skip
            if self.speculative:
                info |= {"spec_accept_rate": 0.75, "spec_accept_length": 2.5, "spec_verify_ct": max(1, n // 3)}
            return info

        if not request.get("stream"):
            await asyncio.sleep(script.hang_s)
            return await _json(send, 200, {"text": "".join(output), "meta_info": meta(len(output), finish)})

        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})  # fmt: skip

        async def event(payload: Any) -> None:
            data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
            await send({"type": "http.response.body", "body": f"data: {data}\n\n".encode(), "more_body": True})

        try:
            if script.hang_s:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(gone.wait(), script.hang_s)
            text = ""
            for n, token in enumerate(output, start=1):
                if gone.is_set():
                    return
                if rid in self.aborted:
                    await event({"text": text, "meta_info": meta(n - 1, "abort")})
                    break
                if script.error_after is not None and n > script.error_after:
                    await event({"error": {"message": "scripted failure mid-stream", "code": 500}})
                    break
                text += token
                await event({"text": text, "meta_info": meta(n, finish if n == len(output) else None)})
                await asyncio.sleep(script.token_delay_s)
            await event("[DONE]")
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            watcher.cancel()


def continuation(prompt: str, text: str) -> str:
    """What a model that would write `text` writes after a prompt that already holds its beginning (a
    plan prefilled after the assistant's turn marker): the rest of it, or when the prefill is not its
    beginning, the claims of its plan the prefill lacks, then the plan's end. A text that is no plan,
    or a prompt with no prefill, gives the text as scripted."""
    start = prompt.rfind(PLAN_START)
    if start < 0 or "<|im_end|>" in prompt[start:] or "<end_of_turn>" in prompt[start:]:
        return text
    prefill = prompt[start:]
    if text.startswith(prefill):
        return text[len(prefill) :]
    try:
        given, wanted = json.loads(prefill + "]}")["claims"], json.loads(text)["claims"]
    except (ValueError, KeyError, TypeError):
        return text

    def plain(claim: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in claim.items() if k != "wording"}

    more = [c for c in wanted if plain(c) not in [plain(g) for g in given]]
    return "".join(", " + json.dumps(c) for c in more) + "]}"


def _check(request: dict[str, Any]) -> str | None:
    if not isinstance(request.get("text"), str):
        return "text must be a string"
    params = request.get("sampling_params", {})
    unknown = set(params) - SAMPLING_KEYS
    if unknown:
        return f"unexpected keyword argument(s) in sampling_params: {sorted(unknown)}"
    if "json_schema" in params:
        if not isinstance(params["json_schema"], str):
            return "sampling_params.json_schema must be a JSON string"
        json.loads(params["json_schema"])
    if not isinstance(request.get("priority", 0), int):
        return "priority must be an integer"
    return None


async def _json(send: Any, status: int, payload: Any) -> None:
    body = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


class RunningFake:
    """The fake on a free loopback port, in a background thread."""

    def __init__(self) -> None:
        self.fake = FakeSGLang()
        self._server = ThreadedServer(self.fake, lifespan="off")
        self.url = self._server.url

    def reset(self) -> None:
        self.fake.scripts.clear()
        self.fake.default = Script()
        self.fake.answer_for = None
        self.fake.speculative = False
        self.fake.api_key = None
        self.fake.requests.clear()
        self.fake.aborted.clear()
        self.fake.disconnected.clear()
        self.fake.connections.clear()

    def stop(self) -> None:
        self._server.stop()

    def kill(self) -> None:
        """The worker dies: new connections are refused, and open streams end mid-body."""
        self._server.kill()
