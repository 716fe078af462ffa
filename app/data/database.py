"""Where the database is, how to connect to it, and how to bring its schema up to date."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import asyncpg
import sqlalchemy.exc
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry, PoolProxiedConnection

from app.data.connecting import asyncpg_url, connect_options
from app.errors import DatabaseUnavailable
from app.settings import PROJECT_ROOT, Settings

# Fail fast while the database is down, instead of holding the request: a connect attempt gets
# CONNECT_TIMEOUT_S (app/data/connecting.py), waiting for a free pooled connection POOL_TIMEOUT_S.
# Every checkout checks its connection first (watch_connections), so the connections a restart killed
# are replaced, not handed out.
POOL_TIMEOUT_S = 10.0
# A connection that sat in the pool longer than this is pinged (one round trip) before it is handed
# out: a peer that vanished without closing the socket shows only then. Under load connections
# come back within milliseconds and are never pinged.
IDLE_PING_S = 5.0
_CHECKED_IN = "checked_in"


@dataclass(frozen=True, slots=True)
class ConnectionBudget:
    """The most Postgres connections one process opens, pool by pool (each opens lazily, up to this)."""

    main: int  # SQLAlchemy's pool: DB_POOL_SIZE
    overflow: int  # and the connections it may open past that under a burst: DB_MAX_OVERFLOW
    answers: int  # the answer path's asyncpg pool (app/data/driver_pool.py): DB_POOL_SIZE
    admission: int  # the shared admission ledger's (app/data/admission.py): ADMISSION_POOL_SIZE, when shared

    @property
    def total(self) -> int:
        return self.main + self.overflow + self.answers + self.admission


def connection_budget(settings: Settings, *, shared_admission: bool | None = None) -> ConnectionBudget:
    """What one process of the service may hold; a server holds workers times this. `shared_admission`
    overrides settings.admission.scope (`serve --workers N` makes its workers shared)."""
    shared = settings.admission.scope == "shared" if shared_admission is None else shared_admission
    return ConnectionBudget(
        main=settings.database.pool_size,
        overflow=settings.database.max_overflow,
        answers=settings.database.pool_size,
        admission=settings.database.admission_pool_size if shared else 0,
    )


def engine_options(settings: Settings | None = None) -> dict[str, Any]:
    """The pool's options, for create_engine and the app's plugin alike."""
    connect_args = connect_options(settings)
    if connect_args.get("statement_cache_size") == 0:
        # SQLAlchemy's dialect keeps prepared statements of its own per connection: none either. (No
        # prepared_statement_name_func: a named statement is parsed in one round trip and run in the
        # next, which outside a transaction, as `autocommit` runs, may reach another server connection.)
        connect_args["prepared_statement_cache_size"] = 0
    return {
        "pool_size": settings.database.pool_size if settings else 5,
        "max_overflow": settings.database.max_overflow if settings else 5,
        "pool_timeout": POOL_TIMEOUT_S,
        # Not SQLAlchemy's pre-ping: on asyncpg it is three round trips (BEGIN, ping, ROLLBACK) per
        # checkout, the largest database cost of an answer. watch_connections checks instead.
        "pool_pre_ping": False,
        "connect_args": connect_args,
    }


def _ping(dbapi_connection: Any) -> None:
    dbapi_connection.ping()


def _on_checkin(dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
    record.info[_CHECKED_IN] = time.monotonic()


def _on_checkout(dbapi_connection: Any, record: ConnectionPoolEntry, proxy: PoolProxiedConnection) -> None:
    """A connection the server closed (a restart, pg_terminate_backend: asyncpg has already seen the
    socket close) is replaced without a round trip; one idle for IDLE_PING_S is pinged first."""
    if dbapi_connection.driver_connection.is_closed():
        raise sqlalchemy.exc.DisconnectionError("the server closed the connection")
    idle_since = record.info.get(_CHECKED_IN)
    if idle_since is not None and time.monotonic() - idle_since > IDLE_PING_S:
        try:
            _ping(dbapi_connection)
        except Exception as exc:
            raise sqlalchemy.exc.DisconnectionError(f"ping failed: {exc}") from exc


def watch_connections(engine: AsyncEngine) -> AsyncEngine:
    """Check each pooled connection as it is checked out (in place of pre-ping)."""
    event.listen(engine.sync_engine, "checkin", _on_checkin)
    event.listen(engine.sync_engine, "checkout", _on_checkout)
    return engine


def create_engine(url: str, settings: Settings | None = None) -> AsyncEngine:
    return watch_connections(create_async_engine(asyncpg_url(url), **engine_options(settings)))


def migrate(url: str, revision: str = "head") -> None:
    """Apply migrations up to revision. Synchronous: Alembic runs its own event loop. Imported here:
    a command that does not migrate (a nightly import) does not pay Alembic's import (~0.15 s)."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(PROJECT_ROOT / "migrations"))
    cfg.attributes["database_url"] = asyncpg_url(url)
    command.upgrade(cfg, revision)


UNAVAILABLE_MESSAGE = "the database is unavailable; try again shortly"
READ_ONLY_MESSAGE = "the database takes no writes just now (a failover may be under way); try again shortly"
# SQLSTATEs that blame the server, not the statement: connection exceptions (08), insufficient
# resources (53: too many clients, out of memory or disk), operator intervention (57P01-57P03:
# shutdown, crash, not accepting connections yet), and a database closed to new connections
# (55000: ALLOW_CONNECTIONS false, what a maintenance window or a failover does).
_SERVER_CLASSES = ("08", "53")
_SERVER_STATES = frozenset({"57P01", "57P02", "57P03", "55000"})
READ_ONLY_STATE = "25006"  # read_only_sql_transaction: a standby after a failover takes no writes


def _server_said_no(exc: BaseException) -> bool:
    if isinstance(exc, (asyncpg.ConnectionDoesNotExistError, asyncpg.InternalClientError)):
        return True  # the socket closed under the statement; or the protocol state broke with it
    if isinstance(exc, asyncpg.InterfaceError) and str(exc) == "connection is closed":
        return True  # a pooled connection found closed (asyncpg has no class of its own for it)
    state = getattr(exc, "sqlstate", None) if isinstance(exc, asyncpg.PostgresError) else None
    return state is not None and (state[:2] in _SERVER_CLASSES or state in _SERVER_STATES)


def _causes(exc: BaseException) -> list[BaseException]:
    """The error and what caused it: SQLAlchemy's wrapped driver error, then each `__cause__`."""
    chain: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and len(chain) < 8:
        chain.append(cause)
        cause = cause.orig if isinstance(cause, sqlalchemy.exc.DBAPIError) else cause.__cause__
    return chain


def connection_lost(exc: BaseException) -> bool:
    """A statement failed because its connection is gone, not because of the statement: a bad
    query, a constraint or a bug stays what it is (a 500, a 409, ...). Through SQLAlchemy or
    straight from asyncpg (app/data/driver_pool.py, app/data/admission.py)."""
    if isinstance(exc, sqlalchemy.exc.DBAPIError) and exc.connection_invalidated:
        return True
    return any(_server_said_no(cause) for cause in _causes(exc))


def unavailable(exc: BaseException, *, connecting: bool) -> DatabaseUnavailable | None:
    """What to answer (503) for `exc`, or None when it is the statement's own error. `connecting`:
    it was raised while getting a connection, so any driver error, refusal or timeout counts."""
    causes = _causes(exc)
    if any(getattr(cause, "sqlstate", None) == READ_ONLY_STATE for cause in causes):
        return DatabaseUnavailable(READ_ONLY_MESSAGE)
    lost = connection_lost(exc) or any(isinstance(cause, (OSError, TimeoutError)) for cause in causes)
    if lost or (connecting and _checkout_failed(exc)):
        return DatabaseUnavailable(UNAVAILABLE_MESSAGE)
    return None


def _checkout_failed(exc: BaseException) -> bool:
    """Getting a connection failed: refused, unreachable, timed out, no free connection in the pool,
    or the server said no (not accepting connections, too many, starting up, shutting down)."""
    driver = (asyncpg.PostgresError, asyncpg.InterfaceError)
    return isinstance(exc, (sqlalchemy.exc.DBAPIError, sqlalchemy.exc.TimeoutError, *driver, OSError, TimeoutError))


@asynccontextmanager
async def connection(engine: AsyncEngine, *, transaction: bool = False) -> AsyncIterator[AsyncConnection]:
    """A pooled connection (in one transaction when asked); the database being out of reach,
    at checkout or mid-statement, raises DatabaseUnavailable."""
    checked_out = False
    try:
        async with engine.connect() as conn:
            checked_out = True
            if not transaction:
                yield conn
                return
            async with conn.begin():
                yield conn
    except Exception as exc:
        if (down := unavailable(exc, connecting=not checked_out)) is not None:
            raise down from exc
        raise


@asynccontextmanager
async def autocommit(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A pooled connection for single-statement work: no BEGIN/COMMIT round trips."""
    async with connection(engine) as conn:
        yield await conn.execution_options(isolation_level="AUTOCOMMIT")


async def driver_of(conn: AsyncConnection) -> asyncpg.Connection:
    """The asyncpg connection under a SQLAlchemy one (for an asyncpg statement on a connection
    the caller already holds; outside any transaction SQLAlchemy has not begun on it yet)."""
    return (await conn.get_raw_connection()).driver_connection


_READ_ONLY = text("SELECT current_setting('transaction_read_only')")


async def read_only(conn: AsyncConnection) -> bool:
    """Whether this database refuses writes (a standby after a failover, or set read-only)."""
    return bool((await conn.execute(_READ_ONLY)).scalar_one() == "on")
