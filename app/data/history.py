"""Reads one account's statement history in a single round trip, always scoped by tenant."""

from __future__ import annotations

from datetime import date

import asyncpg
import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from app.data.database import driver_of
from app.data.sql import Statement
from app.domain.records import AccountHistory
from app.errors import UnreadableData

# One statement, one round trip, whose cost does not grow with the statements' length: the account,
# every statement up to the one asked about with its net from its summary (openings chain through
# them), the totals of the last two, the lines of the last one an answer may name (all kept by
# triggers, migration 0011; arrays of rows since 0025, made json here), the largest lines of the
# merchants or fees the question names that those leave out, and the payments after its close up to
# as_of.
# Cast to text: the driver would decode JSON numbers to floats; msgspec decodes them to Decimal.
# :period_end is the statement's (NULL: the latest).
_CTES = """
acct AS (
    SELECT a.id, a.ref, a.currency, a.opening_balance, c.ref AS customer_ref, c.locale
    FROM accounts a
    JOIN customers c ON c.tenant_id = a.tenant_id AND c.id = a.customer_id
    WHERE a.tenant_id = :tenant_id AND a.ref = :account_ref
),
stmts AS (
    SELECT s.id, s.period_start, s.period_end, s.due_date, s.minimum_due, s.data_version, ss.net
    FROM statements s
    JOIN acct ON s.account_id = acct.id
    JOIN statement_summaries ss ON ss.statement_id = s.id
    WHERE s.tenant_id = :tenant_id AND s.period_end <= COALESCE(CAST(:period_end AS date), 'infinity')
),
last_two AS (
    SELECT ss.totals, ss.lines, stmts.period_start, stmts.period_end,
           row_number() OVER (ORDER BY stmts.period_end DESC) AS n
    FROM stmts JOIN statement_summaries ss ON ss.statement_id = stmts.id
    ORDER BY stmts.period_end DESC
    LIMIT 2
)"""
# :question_lower: the question, lowercased as `mentioned` searches it. The named lines are looked
# for only when the question names one of the statement's labels (a CASE evaluates its subquery only
# when reached).
_HISTORY = """
json_build_object(
    'account_id', acct.id,
    'account_ref', acct.ref,
    'currency', acct.currency,
    'opening_balance', acct.opening_balance,
    'customer_ref', acct.customer_ref,
    'customer_locale', acct.locale,
    'statements', COALESCE((SELECT json_agg(stmts ORDER BY stmts.period_end) FROM stmts), '[]'),
    'totals', COALESCE((SELECT to_json(totals) FROM last_two WHERE n = 1), '[]'),
    'previous_totals', COALESCE((SELECT to_json(totals) FROM last_two WHERE n = 2), '[]'),
    'lines', COALESCE((SELECT to_jsonb(last_two.lines) || CASE WHEN EXISTS (
        SELECT FROM unnest(last_two.totals) l
        WHERE char_length(l.label) >= 2 AND strpos(:question_lower, lower(l.label)) > 0
    ) THEN COALESCE((
        SELECT jsonb_agg(jsonb_build_object('id', t.id, 'posted_on', t.posted_on, 'kind', t.kind, 'amount', t.amount,
                                            'merchant', t.merchant, 'description', t.description)
                         ORDER BY abs(t.amount) DESC, t.posted_on, t.id)
        -- The largest twelve sorted by their keys alone (a label's lines can be hundreds), then read.
        FROM transactions t JOIN (
            SELECT t.id FROM (SELECT DISTINCT l.label FROM unnest(last_two.totals) l  -- the named labels
                              WHERE char_length(l.label) >= 2 AND strpos(:question_lower, lower(l.label)) > 0) named
            JOIN transactions t ON t.account_id = acct.id
              -- (label, day) as one row: only the label index (migration 0029) reads it, one label's
              -- lines of the period, whatever the statistics say of the account's size
              AND (line_label(t.kind, t.merchant, t.description), t.posted_on)
                  BETWEEN (named.label, last_two.period_start) AND (named.label, last_two.period_end)
            WHERE t.tenant_id = :tenant_id AND t.kind <> 'payment'
              AND t.id NOT IN (SELECT x.id FROM unnest(last_two.lines) x)
            ORDER BY abs(t.amount) DESC, t.posted_on, t.id
            LIMIT 12) largest USING (id)
    ), '[]') ELSE '[]' END || COALESCE((
        SELECT jsonb_agg(jsonb_build_object('posted_on', t.posted_on, 'kind', t.kind, 'amount', t.amount,
                                            'merchant', t.merchant, 'description', t.description)
                         ORDER BY t.posted_on, t.id)
        FROM transactions t
        WHERE t.tenant_id = :tenant_id AND t.account_id = acct.id AND t.kind = 'payment'
          AND t.posted_on > last_two.period_end AND t.posted_on <= CAST(:as_of AS date)
    ), '[]') FROM last_two WHERE n = 1), '[]')
)::text"""
_HISTORY_SQL = Statement(f"WITH {_CTES}\nSELECT {_HISTORY}\nFROM acct")

_decoder = msgspec.json.Decoder(AccountHistory)


async def load_history(
    conn: AsyncConnection | asyncpg.Connection,
    tenant_id: int,
    account_ref: str,
    period_end: date | None,
    as_of: date,
    question: str = "",
) -> AccountHistory | None:
    """In one round trip; None when the tenant has no such account (an account without statements
    has an empty list). `question`: the lines of the merchants or fees it names are read too. On an
    asyncpg connection (app/data/driver_pool.py), or on a SQLAlchemy one the caller holds."""
    raw = await driver_of(conn) if isinstance(conn, AsyncConnection) else conn
    where = {
        "tenant_id": tenant_id,
        "account_ref": account_ref,
        "period_end": period_end,
        "as_of": as_of,
        "question_lower": question.lower(),
    }
    row = await raw.fetchrow(_HISTORY_SQL.sql, *_HISTORY_SQL.args(where))
    if row is None:
        return None
    try:
        return _decoder.decode(row[0])
    except msgspec.ValidationError as exc:  # e.g. a date stored as 'infinity', from before the importer refused it
        raise UnreadableData(f"account {account_ref!r} has stored data that cannot be read: {exc}") from exc
