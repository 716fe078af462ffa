"""The answer path's own asyncpg connections, for the statements every answer runs: its history (or
its cached answer, audited by the same statement) and its audit row (app/answers/service.py).

SQLAlchemy's pool checks a connection out and back in through a greenlet each time, with its events
and bookkeeping: 0.15–0.4 ms of CPU per answer for the two checkouts, about a tenth of a model
answer's (`bench in-process`). These statements need none of it: each commits on its own, on
asyncpg's connection directly. The rules are the main pool's (app/data/database.py): at most `size`
connections, a caller waits up to POOL_TIMEOUT_S for one; a connection the server closed is dropped
at checkout without a round trip, one idle for longer than IDLE_PING_S is pinged first; the
database out of reach, at checkout or mid-statement, raises DatabaseUnavailable. A connection whose
statement was interrupted (the caller went away) or lost is closed, never handed out again; one
whose statement merely failed (a constraint, a bad query) is kept.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import asyncpg

from app.data.connecting import CONNECT_TIMEOUT_S, SERVER_SETTINGS, asyncpg_dsn
from app.data.database import IDLE_PING_S, POOL_TIMEOUT_S, UNAVAILABLE_MESSAGE, connection_lost, unavailable
from app.errors import DatabaseUnavailable

_CONNECT_FAILED = (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError)


async def _ping(conn: asyncpg.Connection) -> None:
    await conn.execute("SELECT 1")


class DriverPool:
    """Opens connections as they are first needed; `close` it on the way out."""

    def __init__(self, sqlalchemy_url: str, *, size: int, options: Mapping[str, Any] | None = None) -> None:
        self._dsn = asyncpg_dsn(sqlalchemy_url)
        self._options = dict(options or {})  # asyncpg.connect's, for a pooler (database.driver_options)
        self._slots = asyncio.Semaphore(size)  # one per connection handed out
        self._idle: list[tuple[asyncpg.Connection, float]] = []  # and when each came back
        self._closed = False

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[asyncpg.Connection]:
        await self._take_slot()
        try:
            conn = await self._checkout()
        except BaseException:
            self._slots.release()
            raise
        reusable = False
        try:
            yield conn
            reusable = True
        except Exception as exc:
            if connection_lost(exc) or conn.is_closed():
                raise DatabaseUnavailable(UNAVAILABLE_MESSAGE) from exc
            reusable = True  # the statement's own error: the connection is as good as before
            if (down := unavailable(exc, connecting=False)) is not None:
                raise down from exc  # a write refused by a read-only standby
            raise
        finally:
            if reusable and not self._closed and not conn.is_closed() and not conn.is_in_transaction():
                self._idle.append((conn, time.monotonic()))
            else:
                conn.terminate()
            self._slots.release()

    async def close(self) -> None:
        """Close the idle connections; those still handed out close when they come back."""
        self._closed = True
        while self._idle:
            conn, _ = self._idle.pop()
            try:
                await conn.close(timeout=CONNECT_TIMEOUT_S)
            except Exception:
                conn.terminate()

    async def _take_slot(self) -> None:
        if not self._slots.locked():
            await self._slots.acquire()  # returns at once
            return
        try:
            async with asyncio.timeout(POOL_TIMEOUT_S):
                await self._slots.acquire()
        except TimeoutError:
            raise DatabaseUnavailable(UNAVAILABLE_MESSAGE) from None

    async def _checkout(self) -> asyncpg.Connection:
        if self._closed:
            raise RuntimeError("the driver pool is closed")
        while self._idle:  # the most recently used first: a small hot set, the rest ages into a ping
            conn, since = self._idle.pop()
            if conn.is_closed():  # the server closed it (a restart, pg_terminate_backend)
                continue
            if time.monotonic() - since <= IDLE_PING_S:
                return conn
            try:
                async with asyncio.timeout(CONNECT_TIMEOUT_S):
                    await _ping(conn)
            except BaseException as exc:
                conn.terminate()
                if not isinstance(exc, Exception):
                    raise
                continue
            return conn
        try:
            return await asyncpg.connect(
                self._dsn, timeout=CONNECT_TIMEOUT_S, server_settings=dict(SERVER_SETTINGS), **self._options
            )
        except _CONNECT_FAILED as exc:
            raise DatabaseUnavailable(UNAVAILABLE_MESSAGE) from exc
