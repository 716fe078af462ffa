"""Which replica fills the answer cache on schedule: the holder of a lease on one row (migration
0015). Taking or renewing it is one statement, so it holds behind a transaction-mode pooler too; a
holder that stops renewing loses it when the lease runs out, and another replica takes over."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

_HOLD = text("""
INSERT INTO cache_fill_leader AS l (id, holder, expires_at)
VALUES (1, :replica, clock_timestamp() + make_interval(secs => :ttl_s))
ON CONFLICT (id) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
WHERE l.holder = EXCLUDED.holder OR l.expires_at < clock_timestamp()
RETURNING holder""")
_LET_GO = text("DELETE FROM cache_fill_leader WHERE holder = :replica")


async def hold(conn: AsyncConnection, replica: str, ttl_s: float) -> bool:
    """Take the lease, or renew it if this replica holds it: True while this replica is the one."""
    return (await conn.execute(_HOLD, {"replica": replica, "ttl_s": ttl_s})).first() is not None


async def let_go(conn: AsyncConnection, replica: str) -> None:
    """Give the lease up (a clean shutdown): another replica need not wait for it to run out."""
    await conn.execute(_LET_GO, {"replica": replica})
