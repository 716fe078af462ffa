"""The audit trail: every answered request leaves one row; the console reads them back. And the
answer cache, read (a hit is audited by the same statement) and written here."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any, NamedTuple

import asyncpg
import msgspec
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.data.models import Account, Answer, Customer
from app.data.sql import Statement
from app.domain.vocabulary import Channel, Intent, Locale, Origin, Source


class AuditRow(msgspec.Struct, frozen=True, kw_only=True):
    """One answered request; JSON columns are passed as text (the answer is already encoded once
    for the response)."""

    id: uuid.UUID
    tenant_id: int
    account_id: int
    statement_id: int
    channel: Channel
    origin: Origin
    question: str
    locale: Locale
    answer: str
    source: Source
    intent: Intent
    prompt_version: str
    model: str | None
    usage: str | None
    fallback_reason: str | None  # str(Reason)
    timings: str
    stage_starts: str


# The columns of `answers`, written once: AuditRow's fields. Both inserts (an answer's row, a cache
# hit's) name each column's value, so none can land in another column.
AUDIT_COLUMNS: tuple[str, ...] = AuditRow.__struct_fields__


def insert_answer(values: Mapping[str, str]) -> str:
    """`INSERT INTO answers (...) SELECT ...` from each column's SQL expression, by column name."""
    if values.keys() != set(AUDIT_COLUMNS):
        wrong = sorted(values.keys() ^ set(AUDIT_COLUMNS))
        raise ValueError(f"an answers row needs exactly its columns; missing or unknown: {', '.join(wrong)}")
    return f"INSERT INTO answers ({', '.join(AUDIT_COLUMNS)})\nSELECT {', '.join(values[c] for c in AUDIT_COLUMNS)}"


def json_parameter(name: str) -> str:
    """A JSON column's value, passed as JSON text."""
    return f"CAST(CAST(:{name} AS text) AS jsonb)"


_JSON_COLUMNS = {"answer", "usage", "timings", "stage_starts"}
_INSERT = Statement(insert_answer({c: json_parameter(c) if c in _JSON_COLUMNS else f":{c}" for c in AUDIT_COLUMNS}))


async def record_answer(conn: asyncpg.Connection, row: AuditRow) -> None:
    """On an asyncpg connection (app/data/driver_pool.py): committed (synchronously, durable) when this returns."""
    await conn.execute(_INSERT.sql, *_INSERT.args(row))


# The answer cached under the whole key (app/answers/cache.py), found and audited in one statement
# (committed, synchronously, as it ends): the row repeats the cached answer with source `cache`, this
# request's as-of date and timings, and the original answer's id. No row: no hit.
_SERVED_ROW = insert_answer(
    {
        "id": ":id",
        "tenant_id": ":tenant_id",
        "account_id": ":account_id",
        "statement_id": ":statement_id",
        "channel": ":channel",
        "origin": ":origin",
        "question": ":question",
        "locale": ":locale",
        "answer": "hit.answer || jsonb_build_object('source', 'cache', 'timings_ms', "
        f"{json_parameter('timings')}, 'payment', (hit.answer -> 'payment') || "
        "jsonb_build_object('as_of', CAST(:as_of AS date)))",
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
_SERVED = Statement(f"""
WITH hit AS (
    SELECT answer FROM answer_cache
    WHERE tenant_id = :tenant_id AND statement_id = :statement_id AND facts_digest = :facts_digest
      AND intent = :intent AND locale = :locale AND prompt_version = :prompt_version
      AND engine_profile = :engine_profile
),
served AS (
{_SERVED_ROW}
    FROM hit
    RETURNING answer
)
SELECT CAST(answer AS text) FROM served""")


_STORE_CACHED = text("""
INSERT INTO answer_cache (tenant_id, statement_id, facts_digest, intent, locale, prompt_version, engine_profile,
                          data_version, answer)
VALUES (:tenant_id, :statement_id, :facts_digest, :intent, :locale, :prompt_version, :engine_profile,
        :data_version, CAST(:answer AS jsonb))
ON CONFLICT ON CONSTRAINT uq_answer_cache_key DO NOTHING
""")


async def store_cached(conn: AsyncConnection, key: msgspec.Struct, data_version: int, answer_json: str) -> None:
    """Keep a canonical answer under its cache key (app/answers/cache.py `CacheKey`); `data_version`:
    the statement's as the answer was made (precompute skips statements answered at theirs)."""
    values = {**msgspec.structs.asdict(key), "data_version": data_version, "answer": answer_json}
    await conn.execute(_STORE_CACHED, values)


# The latest statement of each account that closed recently, with each cacheable intent that has no
# answer cached for it at the statement's current data version. (Its facts may still have moved
# since, by the due date passing: the first question after that misses and is filled then.)
_UNCACHED = text("""
SELECT s.tenant_id, a.ref, s.period_end, c.locale, i.intent, s.id, s.data_version
FROM accounts a
JOIN customers c ON c.tenant_id = a.tenant_id AND c.id = a.customer_id
JOIN LATERAL (SELECT * FROM statements s WHERE s.tenant_id = a.tenant_id AND s.account_id = a.id
              ORDER BY s.period_end DESC LIMIT 1) s ON true
CROSS JOIN unnest(CAST(:intents AS text[])) AS i(intent)
WHERE s.period_end >= :since AND s.period_end <= :today
  AND (CAST(:tenant AS text) IS NULL OR a.tenant_id = (SELECT id FROM tenants WHERE slug = :tenant))
  AND NOT EXISTS (SELECT 1 FROM answer_cache k
                  WHERE k.tenant_id = s.tenant_id AND k.statement_id = s.id AND k.data_version = s.data_version
                    AND k.intent = i.intent AND k.locale = c.locale
                    AND k.prompt_version = COALESCE(CAST(:versions AS jsonb) ->> s.tenant_id::text, :prompt_version)
                    AND k.engine_profile = :engine_profile)
ORDER BY s.tenant_id, a.ref, i.intent
""")


class Wanted(NamedTuple):
    """A statement's canonical question of one intent, in its customer's locale, not yet cached."""

    tenant_id: int
    account_ref: str
    period_end: date
    locale: Locale
    intent: Intent
    statement_id: int
    data_version: int


async def uncached(
    conn: AsyncConnection,
    *,
    since: date,
    today: date,
    tenant: str | None,
    versions: Mapping[int, str],
    default_version: str,
    engine_profile: str,
    intents: Sequence[str],
) -> list[Wanted]:
    """The canonical questions not yet cached for recently closed statements (of one tenant, or all);
    `versions`: the prompt version of tenants with an answer policy of their own, `default_version`
    everyone else's."""
    values = {
        "since": since,
        "today": today,
        "tenant": tenant,
        "versions": msgspec.json.encode({str(k): v for k, v in versions.items()}).decode(),
        "prompt_version": default_version,
        "engine_profile": engine_profile,
        "intents": list(intents),
    }
    return [Wanted(*row) for row in (await conn.execute(_UNCACHED, values)).all()]


async def serve_cached(conn: asyncpg.Connection, values: Mapping[str, object]) -> str | None:
    """The cached answer (JSON) for the key in `values`, its audit row committed; None on a miss."""
    row = await conn.fetchrow(_SERVED.sql, *_SERVED.args(values))
    return None if row is None else str(row[0])


class AnswerBrief(msgspec.Struct, frozen=True, kw_only=True):
    id: uuid.UUID
    created_at: datetime
    channel: str
    question: str
    source: str
    intent: str


class AnswerRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One audit row as the console shows it."""

    id: uuid.UUID
    created_at: datetime
    account_ref: str
    channel: str
    question: str
    locale: str  # the answer's: the question's own language, or the customer's when it did not say
    customer_locale: str
    answer: dict[str, Any]
    source: str
    intent: str
    prompt_version: str
    model: str | None
    usage: dict[str, int] | None
    fallback_reason: str | None
    timings: dict[str, float]
    stage_starts: dict[str, float] | None


async def recent_answers(conn: AsyncConnection, tenant_id: int, account_id: int, limit: int = 20) -> list[AnswerBrief]:
    rows = await conn.execute(
        select(Answer.id, Answer.created_at, Answer.channel, Answer.question, Answer.source, Answer.intent)
        .where(Answer.tenant_id == tenant_id, Answer.account_id == account_id)
        .order_by(Answer.created_at.desc())
        .limit(limit)
    )
    return [AnswerBrief(**row._mapping) for row in rows]


async def find_answer(conn: AsyncConnection, tenant_id: int, answer_id: uuid.UUID) -> AnswerRecord | None:
    """The audit row; None for an unknown id, or another tenant's."""
    row = (
        await conn.execute(
            select(
                Answer.id,
                Answer.created_at,
                Account.ref.label("account_ref"),
                Answer.channel,
                Answer.question,
                Answer.locale,
                Customer.locale.label("customer_locale"),
                Answer.answer,
                Answer.source,
                Answer.intent,
                Answer.prompt_version,
                Answer.model,
                Answer.usage,
                Answer.fallback_reason,
                Answer.timings,
                Answer.stage_starts,
            )
            .join(Account, (Account.tenant_id == Answer.tenant_id) & (Account.id == Answer.account_id))
            .join(Customer, (Customer.tenant_id == Account.tenant_id) & (Customer.id == Account.customer_id))
            .where(Answer.tenant_id == tenant_id, Answer.id == answer_id)
        )
    ).first()
    return AnswerRecord(**row._mapping) if row is not None else None
