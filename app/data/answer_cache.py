"""The answer cache (table `answer_cache`, key in app/answers/cache.py `CacheKey`): every statement
that reads or writes it. A hit is found and audited in one statement on the answer path's asyncpg
connection (app/data/driver_pool.py); a canonical answer is stored, and the statements still
without one listed, on SQLAlchemy connections; the replay tools count and empty it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date
from typing import NamedTuple

import asyncpg
import msgspec
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.data.audit import insert_answer, json_parameter
from app.data.sql import Statement
from app.domain.vocabulary import Intent, Locale

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


_TENANTS = "(SELECT id FROM tenants WHERE slug = ANY(:slugs))"
_ROWS = text(f"SELECT count(*) FROM answer_cache WHERE CAST(:slugs AS text[]) IS NULL OR tenant_id IN {_TENANTS}")
_EMPTY = text(f"DELETE FROM answer_cache WHERE tenant_id IN {_TENANTS}")


async def cache_rows(conn: AsyncConnection, tenants: Sequence[str] | None = None) -> int:
    """How many answers are cached for these tenants (None: for every tenant)."""
    slugs = None if tenants is None else list(tenants)
    return int((await conn.execute(_ROWS, {"slugs": slugs})).scalar_one())


async def empty_cache(conn: AsyncConnection, tenants: Sequence[str]) -> None:
    await conn.execute(_EMPTY, {"slugs": list(tenants)})
