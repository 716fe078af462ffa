"""The admission state every replica shares: tenant rate limits, tenant concurrency caps and the
engine's capacity, counted in Postgres (migration 0009), so N replicas admit what one would.

Each process's scheduler (app/inference/scheduler.py) still orders its own queue — priority
levels, fair shares, deadlines — but asks this ledger before a request takes a slot, in one round
trip (`admission_enter`): a rate token from the tenant's bucket, then a lease if the tenant is
under its cap and the engine under its capacity. A lease is a row held until the request ends,
counted only while its replica (this process) beats: a row in admission_replica renewed every
quarter of ALIVE_TTL_S, alive for ALIVE_TTL_S (migration 0018). A process that is killed stops beating, and its
slots are free for everyone within ALIVE_TTL_S, restarted or not. A lease also expires by itself
(LEASE_TTL_S after its last renewal), for one a live replica failed to give back.

It talks to Postgres through a small asyncpg pool of its own (application_name "admission",
ADMISSION_POOL_SIZE connections): an admission is one statement, and taking or giving back a slot
never waits behind the answers' own connections. The function's engine lock is an advisory lock
held to the end of its transaction (pg_advisory_xact_lock), never a session's: safe behind a
transaction-mode pooler.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import uuid
from collections.abc import Mapping
from typing import Any, cast

import asyncpg
import structlog

from app.data.connecting import CONNECT_TIMEOUT_S, asyncpg_dsn
from app.data.database import POOL_TIMEOUT_S, unavailable
from app.data.sql import Statement
from app.domain.priority import TenantLimits, Verdict
from app.errors import DatabaseUnavailable

# A lease a live replica no longer renews (its give-back failed) lapses after this; renewed every third.
LEASE_TTL_S = 15.0
# A replica's leases stop counting this long after its last beat. Beats are one small UPDATE each;
# four to a TTL ride out a missed one (a slow database, a busy event loop).
ALIVE_TTL_S = 2.0

# Bound by name (app/data/sql.py), the function's arguments too: Postgres's named notation, so a
# reordered argument list can never shift a value into another parameter.
_ENTER = Statement(
    "SELECT verdict, retry_after_s FROM admission_enter("
    "p_tenant => :tenant, p_rate => :rate, p_take_token => :take_token, p_want_slot => :want_slot,"
    " p_max_concurrency => :max_concurrency, p_slots => :slots, p_lease => :lease, p_replica => :replica,"
    " p_ttl_s => :ttl_s)"
)
_LEAVE = Statement("DELETE FROM admission_lease WHERE id = :lease")
_RENEW = Statement(
    "UPDATE admission_lease SET expires_at = clock_timestamp() + make_interval(secs => :ttl_s) WHERE id = ANY(:leases)"
)
_BEAT = Statement(
    "INSERT INTO admission_replica AS r (replica, alive_until)"
    " VALUES (:replica, clock_timestamp() + make_interval(secs => :alive_s))"
    " ON CONFLICT (replica) DO UPDATE SET alive_until = EXCLUDED.alive_until"
)
# What no longer counts: lapsed leases, the leases of replicas that stopped beating, and (after a
# minute, so a late beat of a stalled replica is not mistaken for a new one) their rows.
_EXPIRE = Statement(
    "WITH dead AS (DELETE FROM admission_replica WHERE alive_until < clock_timestamp() - interval '1 minute')"
    " DELETE FROM admission_lease l WHERE l.expires_at < clock_timestamp() OR NOT EXISTS ("
    "SELECT 1 FROM admission_replica r WHERE r.replica = l.replica AND r.alive_until > clock_timestamp())"
)
_LEAVE_ALL = Statement(
    "WITH gone AS (DELETE FROM admission_replica WHERE replica = :replica)"
    " DELETE FROM admission_lease WHERE replica = :replica"
)


class PostgresLedger:
    """The shared ledger; `open` it in the app's lifespan and `close` it on the way out."""

    def __init__(
        self,
        sqlalchemy_url: str,
        *,
        pool_size: int = 2,
        lease_ttl_s: float = LEASE_TTL_S,
        alive_ttl_s: float = ALIVE_TTL_S,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self.replica = uuid.uuid4().hex  # this process's name on its leases
        self.lease_ttl_s = lease_ttl_s
        self.alive_ttl_s = alive_ttl_s
        self._dsn = asyncpg_dsn(sqlalchemy_url)
        self._pool_size = pool_size
        self._options = dict(options or {})  # asyncpg.connect's, for a pooler (database.driver_options)
        self._pool: asyncpg.Pool[Any] | None = None
        self._renewer: asyncio.Task[None] | None = None
        self._held: set[str] = set()  # the leases of requests still running here: only these are renewed

    async def open(self) -> None:
        self._pool = await asyncpg.create_pool(
            self._dsn,
            min_size=1,
            max_size=self._pool_size,
            timeout=CONNECT_TIMEOUT_S,  # a slow connect fails like the other pools', not after 60 s
            server_settings={"application_name": "admission"},
            **self._options,
        )
        await self._beat()  # alive before its first lease, or that lease would not count
        self._renewer = asyncio.create_task(self._renew_forever())

    async def close(self) -> None:
        if self._renewer is not None:
            self._renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewer
        if self._pool is not None:
            # A clean exit gives back what it still holds (normally nothing: requests have drained).
            with contextlib.suppress(DatabaseUnavailable):
                await self._execute(_LEAVE_ALL, {"replica": self.replica})
            await self._pool.close()

    async def enter(
        self, tenant: str, limits: TenantLimits, *, take_token: bool, want_slot: bool, slots: int, lease: str
    ) -> tuple[Verdict, float]:
        """Take a rate token (when asked) and a slot (when asked and free) for `tenant`."""
        row = await self._fetchrow(
            _ENTER,
            {
                "tenant": tenant,
                "rate": limits.rate_per_s,
                "take_token": take_token,
                "want_slot": want_slot,
                "max_concurrency": limits.max_concurrency,
                "slots": slots,
                "lease": lease,
                "replica": self.replica,
                "ttl_s": self.lease_ttl_s,
            },
        )
        if row["verdict"] == "granted":
            self._held.add(lease)
        return cast(Verdict, row["verdict"]), float(row["retry_after_s"])

    async def leave(self, lease: str) -> None:
        # Forgotten first: if the delete fails, the lease is no longer renewed and expires.
        self._held.discard(lease)
        await self._fetchrow(_LEAVE, {"lease": lease})

    async def _fetchrow(self, statement: Statement, values: Mapping[str, Any] | None = None) -> Any:
        assert self._pool is not None, "the ledger is not open"
        try:  # connects when no idle connection is left: refused, too many clients, closed to new ones
            conn = await self._pool.acquire(timeout=POOL_TIMEOUT_S)
        except Exception as exc:
            if (down := unavailable(exc, connecting=True)) is not None:
                raise down from exc
            raise
        try:
            return await conn.fetchrow(statement.sql, *statement.args(values or {}))
        except Exception as exc:
            if (down := unavailable(exc, connecting=False)) is not None:
                raise down from exc
            raise
        finally:
            await self._release(conn)

    async def _release(self, conn: Any) -> None:
        """Back to the pool. Its reset fails when the connection died after the statement (a
        terminated session): the pool drops it, and the statement's outcome stands."""
        assert self._pool is not None
        try:
            await self._pool.release(conn)
        except Exception as exc:
            if unavailable(exc, connecting=False) is None:
                raise

    async def _execute(self, statement: Statement, values: Mapping[str, Any] | None = None) -> None:
        await self._fetchrow(statement, values)

    async def _beat(self) -> None:
        await self._execute(_BEAT, {"replica": self.replica, "alive_s": self.alive_ttl_s})

    async def _renew_forever(self) -> None:
        beats_per_renewal = max(1, round(self.lease_ttl_s / 3 / (self.alive_ttl_s / 4)))
        for beat in itertools.count(1):
            await asyncio.sleep(self.alive_ttl_s / 4)
            try:
                await self._beat()
                if beat % beats_per_renewal == 0:
                    await self._execute(_RENEW, {"leases": list(self._held), "ttl_s": self.lease_ttl_s})
                    await self._execute(_EXPIRE)
            except DatabaseUnavailable:
                # If this goes on, this replica's running requests stop counting (its beat lapses,
                # then its leases): the fleet may briefly admit more than its caps, never strand
                # capacity.
                structlog.get_logger("bill_assistant").warning("admission: could not beat or renew leases")
