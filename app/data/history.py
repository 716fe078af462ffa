"""Reads one account's statement history in a single round trip, always scoped by tenant; or,
when the question has a cached answer, serves and audits that answer in that same round trip."""

from __future__ import annotations

import uuid
from datetime import date
from typing import NamedTuple

import asyncpg
import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from app.data.audit import insert_answer, json_parameter
from app.data.database import driver_of
from app.data.sql import Statement
from app.domain.records import AccountHistory
from app.domain.vocabulary import Channel, Intent, Locale, Origin
from app.errors import UnreadableData

# One statement, one round trip, whose cost does not grow with the statements' length: the account,
# every statement up to the one asked about with its net from its summary (openings chain through
# them), the totals of the last two, the lines of the last one an answer may name (all kept by
# triggers, migration 0011), the largest lines of the merchants or fees the question names that those
# leave out, and the payments after its close up to as_of.
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
    'totals', COALESCE((SELECT totals FROM last_two WHERE n = 1), '[]'),
    'previous_totals', COALESCE((SELECT totals FROM last_two WHERE n = 2), '[]'),
    'lines', COALESCE((SELECT CAST(last_two.lines AS jsonb) || CASE WHEN EXISTS (
        SELECT FROM json_array_elements(last_two.totals) l
        WHERE char_length(l ->> 'label') >= 2 AND strpos(:question_lower, lower(l ->> 'label')) > 0
    ) THEN COALESCE((
        SELECT jsonb_agg(jsonb_build_object('id', t.id, 'posted_on', t.posted_on, 'kind', t.kind, 'amount', t.amount,
                                            'merchant', t.merchant, 'description', t.description)
                         ORDER BY abs(t.amount) DESC, t.posted_on, t.id)
        FROM (SELECT t.* FROM transactions t
              WHERE t.tenant_id = :tenant_id AND t.account_id = acct.id AND t.kind <> 'payment'
                AND t.posted_on BETWEEN last_two.period_start AND last_two.period_end
                AND char_length(line_label(t.kind, t.merchant, t.description)) >= 2
                AND strpos(:question_lower, lower(line_label(t.kind, t.merchant, t.description))) > 0
                AND t.id NOT IN (SELECT CAST(x ->> 'id' AS bigint) FROM json_array_elements(last_two.lines) x)
              ORDER BY abs(t.amount) DESC, t.posted_on, t.id
              LIMIT 12) t
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

# With a Lookup (its fields by name, :question_lower its question lowercased as `classify` searches it):
# first the answer cached under the whole key (app/answers/cache.py) for the statement asked about
# — the latest, or exactly the one named — at its data version, of the chat widget's customer when
# one asks, unless the question names one of the statement's labels where that makes it a charge
# question (strpos is `classify`'s `in`). A hit is audited by this statement (committed,
# synchronously, as it ends): the row repeats the cached answer with its source and this request's
# timings; the history, which the hit does not need, is then not read (a CASE evaluates its
# subqueries only when reached).
_SERVED = insert_answer(
    {
        "id": ":audit_id",
        "tenant_id": ":tenant_id",
        "account_id": "hit.account_id",
        "statement_id": "hit.statement_id",
        "channel": ":channel",
        "origin": ":origin",
        "question": ":question",
        "locale": "hit.locale",
        "answer": f"hit.answer || jsonb_build_object('source', 'cache', 'timings_ms', {json_parameter('timings')})",
        "source": "'cache'",
        "intent": ":intent",
        "prompt_version": ":prompt_version",
        "model": "hit.answer ->> 'model'",
        "usage": "NULLIF(hit.answer -> 'usage', 'null')",
        "fallback_reason": "NULL",
        "timings": json_parameter("timings"),
        "stage_starts": json_parameter("stage_starts"),
    }
)
_HISTORY_OR_HIT_SQL = Statement(f"""
WITH {_CTES},
hit AS (
    SELECT acct.id AS account_id, s.id AS statement_id, c.locale, c.answer
    FROM acct
    CROSS JOIN LATERAL (
        SELECT s.id, s.period_end, s.data_version
        FROM statements s
        WHERE s.tenant_id = :tenant_id AND s.account_id = acct.id
          AND s.period_end <= COALESCE(CAST(:period_end AS date), 'infinity')
        ORDER BY s.period_end DESC
        LIMIT 1
    ) s
    JOIN answer_cache c
      ON c.tenant_id = :tenant_id AND c.statement_id = s.id AND c.data_version = s.data_version
     AND c.intent = :intent AND c.locale = COALESCE(CAST(:locale AS text), acct.locale)
     AND c.prompt_version = :prompt_version AND c.engine_profile = :engine_profile AND c.as_of = CAST(:as_of AS date)
    WHERE (CAST(:customer_ref AS text) IS NULL OR acct.customer_ref = :customer_ref)
      AND (CAST(:period_end AS date) IS NULL OR s.period_end = :period_end)
      AND NOT (:labels_matter
               AND EXISTS (SELECT FROM unnest(c.labels) AS label WHERE strpos(:question_lower, label) > 0))
),
served AS (
    {_SERVED}
    FROM hit
    RETURNING answer
)
SELECT CASE WHEN EXISTS (SELECT FROM served) THEN NULL ELSE {_HISTORY} END,
       (SELECT CAST(answer AS text) FROM served)
FROM acct
""")

_decoder = msgspec.json.Decoder(AccountHistory)


class Lookup(msgspec.Struct, frozen=True, kw_only=True):
    """A question as the answer cache is asked about it with the account's records: the rest of the
    key, and the audit row a hit leaves."""

    intent: Intent  # as far as the question alone decides it (app/domain/intents.py `provisional`)
    locale: Locale | None  # None: the customer's
    prompt_version: str
    engine_profile: str
    customer_ref: str | None  # only this customer's accounts (the chat widget's token)
    labels_matter: bool  # the question is a charge question if it names one of the statement's labels
    question: str
    audit_id: uuid.UUID
    channel: Channel
    origin: Origin
    timings: str  # JSON, as the audit row keeps them
    stage_starts: str


class Records(NamedTuple):
    """What an answer reads first: the account's history, or, on a cache hit, the cached answer
    (JSON) instead, its audit row committed. Exactly one of them."""

    history: AccountHistory | None
    served: str | None


async def load_records(
    conn: asyncpg.Connection,
    tenant_id: int,
    account_ref: str,
    period_end: date | None,
    as_of: date,
    question: str,
    lookup: Lookup | None = None,
) -> Records | None:
    """In one round trip. None when the tenant has no such account."""
    where = {
        "tenant_id": tenant_id,
        "account_ref": account_ref,
        "period_end": period_end,
        "as_of": as_of,
        "question_lower": (lookup.question if lookup else question).lower(),
    }
    if lookup is None:
        row = await conn.fetchrow(_HISTORY_SQL.sql, *_HISTORY_SQL.args(where))
    else:
        values = msgspec.structs.asdict(lookup) | where
        row = await conn.fetchrow(_HISTORY_OR_HIT_SQL.sql, *_HISTORY_OR_HIT_SQL.args(values))
    if row is None:
        return None
    if lookup is not None and row[1] is not None:
        return Records(None, row[1])
    try:
        history = _decoder.decode(row[0])
    except msgspec.ValidationError as exc:  # e.g. a date stored as 'infinity', from before the importer refused it
        raise UnreadableData(f"account {account_ref!r} has stored data that cannot be read: {exc}") from exc
    return Records(history, None)


async def load_history(
    conn: AsyncConnection | asyncpg.Connection, tenant_id: int, account_ref: str, period_end: date | None, as_of: date
) -> AccountHistory | None:
    """None when the tenant has no such account. An account without statements has an empty list.
    On an asyncpg connection (app/data/driver_pool.py), or on a SQLAlchemy one the caller holds."""
    raw = await driver_of(conn) if isinstance(conn, AsyncConnection) else conn
    records = await load_records(raw, tenant_id, account_ref, period_end, as_of, question="")
    return records.history if records is not None else None
