"""Answer ahead of time the questions customers ask after a statement closes ("why is my bill
different?", "did my payment arrive?", "why was I charged interest?"): each intent's canonical
question, at batch priority, so that their answers come from the cache in milliseconds."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta
from typing import NamedTuple

import msgspec
from sqlalchemy import text

from app.answers.messages import Ask
from app.answers.schemas import ExplanationRequest, ExplanationResponse
from app.answers.service import AnswerService
from app.data.database import autocommit
from app.domain.intents import CANONICAL_QUESTIONS
from app.domain.policy import TenantPolicy
from app.domain.vocabulary import Intent, Locale
from app.prompts import PROMPT_VERSION, answer_version

# The latest statement of each account that closed recently, with each cacheable intent that has no
# answer cached for it at the statement's current data version. (Its facts may still have moved
# since, by the due date passing: the first question after that misses and is filled then.)
_WANTED = text("""
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
# Tenants with an answer policy of their own: their answers are made under a version of their own.
_OWN_POLICIES = text("SELECT id, name, policy FROM tenants WHERE policy ? 'answers'")


class Wanted(NamedTuple):
    """A statement's canonical question of one intent, in its customer's locale, not yet cached."""

    tenant_id: int
    account_ref: str
    period_end: date
    locale: Locale
    intent: Intent
    statement_id: int
    data_version: int


async def wanted(answers: AnswerService, today: date, days: int, tenant: str | None) -> list[Wanted]:
    assert answers.llm is not None, "precomputing needs an engine"
    async with autocommit(answers.db) as conn:
        versions = {
            str(row.id): answer_version(msgspec.convert({"brand": row.name, **row.policy}, TenantPolicy))
            for row in await conn.execute(_OWN_POLICIES)
        }
        rows = await conn.execute(
            _WANTED,
            {
                "since": today - timedelta(days=days),
                "today": today,
                "tenant": tenant,
                "versions": msgspec.json.encode(versions).decode(),
                "prompt_version": PROMPT_VERSION,
                "engine_profile": answers.llm.profile,
                "intents": sorted(CANONICAL_QUESTIONS),
            },
        )
        return [Wanted(*row) for row in rows.all()]


async def precompute(
    answers: AnswerService,
    todo: list[Wanted],
    today: date,
    on_done: Callable[[ExplanationResponse], None] = lambda answer: None,
) -> None:
    """Answer each statement's canonical question of each intent as of today; validated answers land
    in the cache."""
    for tenant_id, account_ref, period_end, locale, intent, _, _ in todo:
        principal = await answers.tenant(tenant_id)
        assert principal is not None
        request = ExplanationRequest(
            account_ref=account_ref,
            question=CANONICAL_QUESTIONS[intent][locale],
            statement_period_end=period_end,
            as_of=today,
            channel="batch",
        )
        ask = Ask(principal=principal, request=request, channel="batch", today=today, origin="fill")
        on_done(await answers.explain(ask))
