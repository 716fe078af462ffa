"""Reads one account's statement history in a single round trip, always scoped by tenant."""

from __future__ import annotations

from datetime import date
from typing import NamedTuple

import asyncpg
import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from app.data.database import driver_of
from app.domain.records import AccountHistory
from app.errors import UnreadableData

# One statement, one round trip: the account, every statement up to the one asked about with the
# signed sum of its period (openings chain through them), and the lines from the previous
# statement's start to the later of the statement's end and as_of (payments after the close).
# Cast to text: the driver would decode JSON numbers to floats; msgspec decodes them to Decimal.
# With them, in the same round trip, the answers cached for that statement (app/answers/cache.py):
# those of its data version, the prompt version $5 and the engine profile $6 (NULL: none looked
# up) as of $4, by "intent/locale", the rest of the cache key.
# $1 tenant, $2 account ref, $3 the statement's period end (NULL: the latest), $4 as of.
_HISTORY_SQL = """
WITH acct AS (
    SELECT a.id, a.ref, a.currency, a.opening_balance, c.ref AS customer_ref, c.locale
    FROM accounts a
    JOIN customers c ON c.tenant_id = a.tenant_id AND c.id = a.customer_id
    WHERE a.tenant_id = $1 AND a.ref = $2
),
stmts AS (
    SELECT s.id, s.period_start, s.period_end, s.due_date, s.minimum_due, s.data_version,
           COALESCE(SUM(CASE WHEN t.kind IN ('refund', 'payment') THEN -t.amount ELSE t.amount END), 0)
               AS net
    FROM statements s
    JOIN acct ON s.account_id = acct.id
    LEFT JOIN transactions t
        ON t.tenant_id = s.tenant_id AND t.account_id = s.account_id
       AND t.posted_on BETWEEN s.period_start AND s.period_end
    WHERE s.tenant_id = $1 AND s.period_end <= COALESCE(CAST($3 AS date), 'infinity')
    GROUP BY s.id
),
bounds AS (
    SELECT (SELECT period_start FROM stmts ORDER BY period_end DESC OFFSET 1 LIMIT 1) AS prev_start,
           (SELECT period_start FROM stmts ORDER BY period_end DESC LIMIT 1) AS cur_start,
           GREATEST((SELECT MAX(period_end) FROM stmts), CAST($4 AS date)) AS upto
)
SELECT json_build_object(
    'account_id', acct.id,
    'account_ref', acct.ref,
    'currency', acct.currency,
    'opening_balance', acct.opening_balance,
    'customer_ref', acct.customer_ref,
    'customer_locale', acct.locale,
    'statements', COALESCE((SELECT json_agg(stmts ORDER BY stmts.period_end) FROM stmts), '[]'),
    'lines', COALESCE((
        SELECT json_agg(json_build_object(
                   'posted_on', t.posted_on, 'kind', t.kind, 'amount', t.amount,
                   'merchant', t.merchant, 'description', t.description)
               ORDER BY t.posted_on, t.id)
        FROM transactions t, bounds
        WHERE t.tenant_id = $1 AND t.account_id = acct.id
          AND t.posted_on BETWEEN COALESCE(bounds.prev_start, bounds.cur_start) AND bounds.upto
    ), '[]')
)::text,
(
    SELECT json_object_agg(c.intent || '/' || c.locale, c.answer)::text
    FROM answer_cache c
    JOIN (SELECT id, data_version FROM stmts ORDER BY period_end DESC LIMIT 1) latest
      ON c.statement_id = latest.id AND c.data_version = latest.data_version
    WHERE c.tenant_id = $1 AND c.prompt_version = $5 AND c.engine_profile = $6 AND c.as_of = CAST($4 AS date)
)
FROM acct
"""

_decoder = msgspec.json.Decoder(AccountHistory)
_cached_decoder = msgspec.json.Decoder(dict[str, msgspec.Raw])


class Records(NamedTuple):
    history: AccountHistory
    # The answers cached for the statement asked about (the latest in history), as JSON, by
    # "intent/locale"; empty when none, or none was asked for.
    cached: dict[str, msgspec.Raw]


async def load_records(
    conn: asyncpg.Connection,
    tenant_id: int,
    account_ref: str,
    period_end: date | None,
    as_of: date,
    *,
    cache: tuple[str, str] | None = None,
) -> Records | None:
    """An account's history and, for `cache` (prompt version, engine profile), the answers cached
    for its statement: what every answer reads, in one round trip. None when the tenant has no such account."""
    prompt_version, engine_profile = cache or ("", None)
    row = await conn.fetchrow(_HISTORY_SQL, tenant_id, account_ref, period_end, as_of, prompt_version, engine_profile)
    if row is None:
        return None
    try:
        history = _decoder.decode(row[0])
    except msgspec.ValidationError as exc:  # e.g. a date stored as 'infinity', from before the importer refused it
        raise UnreadableData(f"account {account_ref!r} has stored data that cannot be read: {exc}") from exc
    return Records(history, _cached_decoder.decode(row[1]) if row[1] is not None else {})


async def load_history(
    conn: AsyncConnection | asyncpg.Connection, tenant_id: int, account_ref: str, period_end: date | None, as_of: date
) -> AccountHistory | None:
    """None when the tenant has no such account. An account without statements has an empty list.
    On an asyncpg connection (app/data/driver_pool.py), or on a SQLAlchemy one the caller holds."""
    raw = await driver_of(conn) if isinstance(conn, AsyncConnection) else conn
    records = await load_records(raw, tenant_id, account_ref, period_end, as_of)
    return records.history if records is not None else None
