"""Precomputed and remembered answers: exact match, validated canonical answers only.

Only the answer to an intent's canonical question ("Why is my bill different from last month?") is
stored — by precompute, or by a canonical generation queued at batch priority after a miss — and a
hit is served only to questions classified to that intent. A customer's own free-text question
never becomes another question's answer, so an instruction smuggled into a question cannot either.

The key holds everything an answer depends on — the statement's data version (bumped by triggers
when its transactions or payments change), the intent, the locale, the prompt version, the engine
profile (model, quantization, engine build) and the as-of date — so a hit can never describe stale
data, another template or another engine. Charge questions are not cached: their answer depends on
which charge the question names.

A hit is looked up with the account's records, and audited, by the statement that reads them
(app/data/history.py): one round trip. With the answer the cache keeps the statement's labels, so
that statement can tell a bill-change question that names a merchant (a charge question) from one
that does not.
"""

from __future__ import annotations

from datetime import date

import msgspec
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.domain.intents import CANONICAL_QUESTIONS
from app.domain.vocabulary import Intent, Locale

CACHEABLE_INTENTS: frozenset[Intent] = frozenset(CANONICAL_QUESTIONS)


class CacheKey(msgspec.Struct, frozen=True, kw_only=True):
    tenant_id: int
    statement_id: int
    data_version: int
    intent: Intent
    locale: Locale
    prompt_version: str
    engine_profile: str
    as_of: date


_STORE = text("""
INSERT INTO answer_cache (tenant_id, statement_id, data_version, intent, locale, prompt_version, engine_profile,
                          as_of, answer, labels)
VALUES (:tenant_id, :statement_id, :data_version, :intent, :locale, :prompt_version, :engine_profile, :as_of,
        CAST(:answer AS jsonb), :labels)
ON CONFLICT ON CONSTRAINT uq_answer_cache_key DO NOTHING
""")


async def store(conn: AsyncConnection, key: CacheKey, answer_json: str, labels: list[str]) -> None:
    await conn.execute(_STORE, {**msgspec.structs.asdict(key), "answer": answer_json, "labels": labels})
