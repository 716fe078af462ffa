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

from app.answers.messages import Ask, Turn
from app.data.history import Lookup
from app.domain.intents import CANONICAL_QUESTIONS, provisional
from app.domain.vocabulary import Intent, Locale
from app.inference.engine import Engine
from app.prompts import PROMPT_VERSION

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


def lookup(ask: Ask, llm: Engine | None) -> Lookup | None:
    """What the answer cache is asked, if the question may have a cached answer: a validated model
    answer to the intent's canonical question about the same data, template and engine."""
    if llm is None or not ask.use_cache:
        return None
    question, stopwatch = ask.request.question, ask.stopwatch
    intent, labels_matter = provisional(question)
    if intent not in CACHEABLE_INTENTS:
        return None
    return Lookup(
        intent=intent,
        locale=ask.request.locale,
        prompt_version=PROMPT_VERSION,
        engine_profile=llm.profile,
        customer_ref=ask.customer_ref,
        labels_matter=labels_matter,
        question=question,
        audit_id=ask.audit_id,
        channel=ask.channel,
        origin=ask.origin,
        # The hit's audit row is written before the statement ends: it holds the stages up to it.
        timings=msgspec.json.encode(stopwatch.snapshot()).decode(),
        stage_starts=msgspec.json.encode(stopwatch.starts).decode(),
    )


def key(turn: Turn, llm: Engine | None) -> CacheKey | None:
    """Where a canonical answer to this turn is kept."""
    if llm is None or turn.intent not in CACHEABLE_INTENTS:
        return None
    return CacheKey(
        tenant_id=turn.ask.principal.tenant_id,
        statement_id=turn.facts.statement.id,
        data_version=turn.history.statements[-1].data_version,
        intent=turn.intent,
        locale=turn.locale,
        prompt_version=PROMPT_VERSION,
        engine_profile=llm.profile,
        as_of=turn.as_of,
    )
