"""Every knob of the service, read once from the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


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

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        e = os.environ if env is None else env
        return cls(
            database_url=e.get("DATABASE_URL") or None,
            data_dir=Path(e.get("BILL_ASSISTANT_DATA_DIR", str(PROJECT_ROOT / ".data"))),
            db_pool_size=int(e.get("DB_POOL_SIZE", "10")),
            db_max_overflow=int(e.get("DB_MAX_OVERFLOW", "5")),
            log_questions=_flag(e.get("LOG_QUESTIONS")),
            log_level=e.get("LOG_LEVEL", "INFO").upper(),
            api_key_cache_ttl=float(e.get("API_KEY_CACHE_TTL", "30")),
        )


@cache
def get_settings() -> Settings:
    return Settings.from_env()
