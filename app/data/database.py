"""Where the database is, how to connect to it, and how to bring its schema up to date."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from app.settings import PROJECT_ROOT, Settings

# Kept for the life of the process: pgserver stops the embedded cluster when its last user exits.
_embedded_servers: dict[Path, Any] = {}


def asyncpg_url(url: str) -> str:
    """Accept any Postgres URL spelling (postgres://, postgresql://, +psycopg) and use asyncpg."""
    parsed = make_url(url.replace("postgres://", "postgresql://", 1))
    if parsed.get_backend_name() != "postgresql":
        raise ValueError(f"DATABASE_URL must point to PostgreSQL, not {parsed.get_backend_name()!r}")
    return parsed.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)


def start_embedded_postgres(data_dir: Path) -> str:
    """Start (or join) the embedded Postgres cluster under data_dir and return its URL."""
    pg_dir = (data_dir / "postgres").resolve()
    if pg_dir not in _embedded_servers:
        import pgserver  # imported here: only the embedded default needs it

        pg_dir.mkdir(parents=True, exist_ok=True)
        _embedded_servers[pg_dir] = pgserver.get_server(pg_dir, cleanup_mode="stop")  # type: ignore[attr-defined]
    # pgserver listens on a Unix socket inside the data folder.
    return asyncpg_url(f"postgresql://postgres@/postgres?host={pg_dir}")


def resolve_database_url(settings: Settings) -> str:
    if settings.database_url:
        return asyncpg_url(settings.database_url)
    return start_embedded_postgres(settings.data_dir)


def create_engine(url: str, settings: Settings | None = None) -> AsyncEngine:
    pool_size = settings.db_pool_size if settings else 5
    max_overflow = settings.db_max_overflow if settings else 5
    return create_async_engine(
        asyncpg_url(url),
        pool_size=pool_size,
        max_overflow=max_overflow,
        pool_pre_ping=False,  # asyncpg reports a dead connection on first use; the pool replaces it
        connect_args={"server_settings": {"application_name": "bill-assistant"}},
    )


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(PROJECT_ROOT / "migrations"))
    cfg.attributes["database_url"] = asyncpg_url(url)
    return cfg


def migrate(url: str, revision: str = "head") -> None:
    """Apply migrations up to revision. Synchronous: Alembic runs its own event loop."""
    command.upgrade(alembic_config(url), revision)


@asynccontextmanager
async def autocommit(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A pooled connection for single-statement work: no BEGIN/COMMIT round trips."""
    async with engine.connect() as conn:
        yield await conn.execution_options(isolation_level="AUTOCOMMIT")
