"""What the replay tools (app/replay/) read and write: the seeded population a traffic file is made
from, the requests a bank's audit rows say were answered, and the answer cache an A/B run empties
and watches."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

# The answer cache an A/B run empties and watches: its own module's statements (app/data/answer_cache.py).
from app.data.answer_cache import cache_rows as cache_rows
from app.data.answer_cache import empty_cache as empty_cache

_POPULATION = text(
    "SELECT t.slug, a.ref, c.locale, c.ref FROM accounts a JOIN customers c ON c.id = a.customer_id"
    " AND c.tenant_id = a.tenant_id JOIN tenants t ON t.id = a.tenant_id WHERE t.slug = ANY(:slugs)"
    " ORDER BY t.slug, a.ref"
)

# The requests answered between two instants, by arrival: the audit row is written as the answer
# ends, `timings.total` after the request arrived. The console's questions are left out (agents at a
# form; replay plays widget, api and batch), and so is what the service asked itself (cache fills)
# and batch jobs' items (their job was one request).
_ANSWERED = text("""
SELECT t.slug, a.channel, acc.ref AS account_ref, c.ref AS customer_ref, c.name, a.question, a.locale,
       CAST(a.answer -> 'payment' ->> 'as_of' AS date) AS as_of,
       a.created_at - make_interval(secs => COALESCE(CAST(a.timings ->> 'total' AS float8), 0) / 1000) AS arrived
FROM answers a
JOIN tenants t ON t.id = a.tenant_id
JOIN accounts acc ON acc.tenant_id = a.tenant_id AND acc.id = a.account_id
JOIN customers c ON c.tenant_id = acc.tenant_id AND c.id = acc.customer_id
WHERE a.created_at >= :since AND a.created_at < :until AND a.origin = 'request' AND a.channel <> 'console'
  AND (CAST(:tenant AS text) IS NULL OR t.slug = :tenant)
ORDER BY arrived, a.id""")

_REASONS = text("SELECT CAST(id AS text), fallback_reason FROM answers WHERE id = ANY(CAST(:ids AS uuid[]))")


async def population(conn: AsyncConnection, tenants: Sequence[str]) -> list[Any]:
    """Each account of the tenants: (tenant slug, account ref, its customer's locale, customer ref)."""
    return list((await conn.execute(_POPULATION, {"slugs": list(tenants)})).all())


async def answered(conn: AsyncConnection, since: datetime, until: datetime, tenant: str | None) -> list[Any]:
    """The requests answered between `since` and `until` (of one tenant, or all), in arrival order."""
    return list((await conn.execute(_ANSWERED, {"since": since, "until": until, "tenant": tenant})).all())


async def fallback_reasons(conn: AsyncConnection, answer_ids: Sequence[str]) -> dict[str, str]:
    """Each answer's fallback reason, for those that have one."""
    rows = await conn.execute(_REASONS, {"ids": list(answer_ids)})
    return {row[0]: row[1] for row in rows.all() if row[1]}
