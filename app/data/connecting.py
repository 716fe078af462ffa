"""Where the database is and how the driver connects to it, without SQLAlchemy: a nightly `import`
(app/cli/database.py) loads CSV files on one asyncpg connection and starts without SQLAlchemy's
import (about 0.45 s of it). The service's pools are built on these (app/data/database.py)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import asyncpg

from app.settings import Settings

CONNECT_TIMEOUT_S = 5.0  # a connect attempt to a database that is down fails fast
SERVER_SETTINGS = {"application_name": "bill-assistant"}  # how an operator tells the service's sessions

# Kept for the life of the process: pgserver stops the embedded cluster when its last user exits.
_embedded_servers: dict[Path, Any] = {}


def asyncpg_url(url: str) -> str:
    """Accept any Postgres URL spelling (postgres://, postgresql://, +psycopg) and use asyncpg."""
    scheme, separator, rest = url.partition("://")
    backend = scheme.split("+")[0]
    backend = "postgresql" if backend == "postgres" else backend
    if not separator or backend != "postgresql":
        raise ValueError(f"DATABASE_URL must point to PostgreSQL, not {backend!r}")
    return f"postgresql+asyncpg://{rest}"


def asyncpg_dsn(sqlalchemy_url: str) -> str:
    """The same database, spelled for asyncpg itself (no `+asyncpg` driver suffix)."""
    return "postgresql://" + sqlalchemy_url.partition("://")[2]


def start_embedded_postgres(data_dir: Path) -> str:
    """Start (or join) the embedded Postgres cluster under data_dir and return its URL."""
    pg_dir = (data_dir / "postgres").resolve()
    if pg_dir not in _embedded_servers:
        with warnings.catch_warnings():
            # pgserver keeps its lock in the user's runtime folder; without XDG_RUNTIME_DIR (a container,
            # sudo, a CI runner) platformdirs warns on import and falls back to /tmp/runtime-<uid>, which
            # serves as well: not something to print on every start.
            warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR")
            import pgserver  # imported here: only the embedded default needs it

        pg_dir.mkdir(parents=True, exist_ok=True)
        _embedded_servers[pg_dir] = pgserver.get_server(pg_dir, cleanup_mode="stop")  # type: ignore[attr-defined]
    # pgserver listens on a Unix socket inside the data folder.
    return asyncpg_url(f"postgresql://postgres@/postgres?host={pg_dir}")


def resolve_database_url(settings: Settings) -> str:
    if settings.database.url:
        return asyncpg_url(settings.database.url)
    return start_embedded_postgres(settings.database.data_dir)


def driver_options(settings: Settings | None) -> dict[str, Any]:
    """asyncpg.connect's options for what the pooler in front of Postgres allows. Behind a
    transaction-mode pooler the next transaction may run on another server connection, where a
    prepared statement named on this one does not exist (or another client's of the same name
    does): statement_cache_size=0 makes asyncpg use the unnamed statement only, parsed again in the
    same round trip that binds and runs it, so nothing outlives its transaction."""
    if settings is not None and settings.database.pooler == "transaction":
        return {"statement_cache_size": 0}
    return {}


def connect_options(settings: Settings | None) -> dict[str, Any]:
    """asyncpg.connect's options for the service's connections: the main pool's (app/data/database.py
    `engine_options`) and a bulk load's own (`connect`)."""
    return {"timeout": CONNECT_TIMEOUT_S, "server_settings": dict(SERVER_SETTINGS), **driver_options(settings)}


async def connect(url: str, settings: Settings | None = None) -> asyncpg.Connection:
    """One connection of the driver's own (a bulk load's), as the pools would open it."""
    return await asyncpg.connect(asyncpg_dsn(url), **connect_options(settings))
