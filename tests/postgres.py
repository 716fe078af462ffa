"""The Postgres server the tests use: TEST_DATABASE_URL, else the one on 127.0.0.1:5432, else an
embedded one (pgserver) in .data/test. Each session makes its own database on it (tests/conftest.py),
and a test module whose leftovers would reach other tests' services makes one more (new_database).
Each is a copy of one template migrated once per process: a copy takes a third of a migration's time."""

from __future__ import annotations

import asyncio
import atexit
import functools
import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from app.data.connecting import asyncpg_url, start_embedded_postgres
from app.data.database import migrate
from app.settings import PROJECT_ROOT


def admin_url() -> str:
    """A URL to the server's `postgres` database, for creating and dropping the tests' databases."""
    if os.environ.get("TEST_DATABASE_URL"):
        return asyncpg_url(os.environ["TEST_DATABASE_URL"])
    try:
        socket.create_connection(("127.0.0.1", 5432), timeout=0.5).close()
        return "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
    except OSError:
        return start_embedded_postgres(PROJECT_ROOT / ".data" / "test")


async def _admin(url: str, statement: str) -> None:
    engine = create_async_engine(url, isolation_level="AUTOCOMMIT")
    async with engine.connect() as conn:
        await conn.execute(text(statement))
    await engine.dispose()


def _url(admin: str, name: str) -> str:
    return make_url(admin).set(database=name).render_as_string(hide_password=False)


@functools.cache
def _template() -> str:
    """A database migrated by Alembic that new databases copy; dropped when the process exits."""
    admin = admin_url()
    name = f"bill_template_{uuid.uuid4().hex[:10]}"
    asyncio.run(_admin(admin, f'CREATE DATABASE "{name}"'))
    atexit.register(lambda: asyncio.run(_admin(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')))
    migrate(_url(admin, name))
    return name


@contextmanager
def new_database() -> Iterator[str]:
    """A database of its own on the tests' server, a copy of the migrated template; dropped afterwards."""
    admin, template = admin_url(), _template()
    name = f"bill_test_{uuid.uuid4().hex[:10]}"
    asyncio.run(_admin(admin, f'CREATE DATABASE "{name}" TEMPLATE "{template}"'))
    try:
        yield _url(admin, name)
    finally:
        asyncio.run(_admin(admin, f'DROP DATABASE "{name}" WITH (FORCE)'))
