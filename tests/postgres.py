"""The Postgres server the tests use: TEST_DATABASE_URL, else the one on 127.0.0.1:5432, else an
embedded one (pgserver) in .data/test. Each session makes its own database on it (tests/conftest.py)."""

from __future__ import annotations

import os
import socket

from app.data.connecting import asyncpg_url, start_embedded_postgres
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
