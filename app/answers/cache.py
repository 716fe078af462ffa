"""Precomputed and remembered answers: exact match, validated canonical answers only.

Only the answer to an intent's canonical question ("Why is my bill different from last month?") is
stored — by precompute, or by a canonical generation queued at batch priority after a miss — and a
hit is served only to questions classified to that intent. A customer's own free-text question
never becomes another question's answer, so an instruction smuggled into a question cannot either.

The key is what the answer was built from: a digest of its facts (app/domain/facts.py
`facts_digest`, where the as-of date counts only as whether the due date has passed) and of the
versions of the bank's passages it may quote (an approved change is a miss), the intent,
the locale, the prompt version and the engine profile (model, quantization, engine build). So a hit
states exactly the facts a fresh answer would, from the same template and engine; the same facts on
the next day hit, and a payment, a new line or the due date passing miss. Charge questions are not
cached: their answer depends on which charge the question names.

A hit is looked up once the facts are computed, and audited by the same statement; the answer
served carries this request's as-of date and timings. Every statement on the cache is in
app/data/answer_cache.py; this module decides what is kept and under which key.
"""

from __future__ import annotations

import functools

import msgspec
from sqlalchemy.ext.asyncio import AsyncEngine

from app.answers.messages import Turn
from app.data import answer_cache
from app.data.database import autocommit
from app.data.driver_pool import DriverPool
from app.domain.answer_policy import required_claims
from app.domain.facts import facts_digest
from app.domain.knowledge import quoted_digest
from app.domain.plan import same_claim
from app.domain.understanding import Reading, understand
from app.domain.vocabulary import Intent, Locale
from app.inference.engine import Engine
from app.locales import CANONICAL_QUESTIONS
from app.prompts import answer_version

CACHEABLE_INTENTS: frozenset[Intent] = frozenset(CANONICAL_QUESTIONS)


class CacheKey(msgspec.Struct, frozen=True, kw_only=True):
    tenant_id: int
    statement_id: int
    facts_digest: str
    intent: Intent
    locale: Locale
    prompt_version: str
    engine_profile: str


def hit_values(turn: Turn, key: CacheKey) -> dict[str, object]:
    """What app/data/answer_cache.py `serve_cached` looks up and audits a hit with: the key, and this
    request's row."""
    ask, stopwatch = turn.ask, turn.ask.stopwatch
    return {
        **msgspec.structs.asdict(key),
        "id": ask.audit_id,
        "account_id": turn.history.account_id,
        "channel": ask.channel,
        "origin": ask.origin,
        "question": ask.request.question,
        "as_of": turn.as_of,
        # The hit's audit row is written before the statement ends: it holds the stages up to it.
        "timings": msgspec.json.encode(stopwatch.snapshot()).decode(),
        "stage_starts": msgspec.json.encode(stopwatch.starts).decode(),
    }


@functools.lru_cache(maxsize=16)
def _canonical_reading(intent: Intent, locale: Locale) -> Reading:
    """What the canonical question asks (it names no line: the statement's lines do not matter)."""
    return understand(CANONICAL_QUESTIONS[intent][locale], ())


def _covered(turn: Turn) -> bool:
    """Whether the canonical answer says everything this question requires (app/domain/answer_policy.py):
    a two-part question, or one that asks for more than the canonical question ("how much is still to
    pay?"), needs its own answer."""
    facts, rules = turn.facts, turn.ask.principal.policy.answers
    given = required_claims(facts, _canonical_reading(turn.intent, turn.locale), rules=rules)
    return all(any(same_claim(c, g) for g in given) for c in required_claims(facts, turn.reading, rules=rules))


def key(turn: Turn, llm: Engine | None) -> CacheKey | None:
    """Where a canonical answer to this turn is kept."""
    reading = turn.reading
    if llm is None or turn.intent not in CACHEABLE_INTENTS:
        return None
    if reading.subjects or reading.choices or reading.followup:  # not the canonical question
        return None
    if not _covered(turn):
        return None
    return CacheKey(
        tenant_id=turn.ask.principal.tenant_id,
        statement_id=turn.facts.statement.id,
        # The versions of the bank's passages it may quote (the reasons for its fees) count too.
        facts_digest=quoted_digest(facts_digest(turn.facts), turn.quotes.reasons),
        intent=turn.intent,
        locale=turn.locale,
        prompt_version=answer_version(turn.ask.principal.policy),
        engine_profile=llm.profile,
    )


async def find(pool: DriverPool, turn: Turn, key: CacheKey) -> str | None:
    """The answer cached under `key` (JSON), its audit row for this request committed; None on a miss."""
    async with pool.connection() as conn:
        return await answer_cache.serve_cached(conn, hit_values(turn, key))


async def keep(db: AsyncEngine, turn: Turn, key: CacheKey, answer_json: str) -> None:
    """Keep a checked canonical answer, marked with its statement's data version as it was made."""
    async with autocommit(db) as conn:
        await answer_cache.store_cached(conn, key, turn.history.statements[-1].data_version, answer_json)
