"""Answer ahead of time the questions customers ask after a statement closes ("why is my bill
different?", "did my payment arrive?", "why was I charged interest?"): each intent's canonical
question, at batch priority, so that their answers come from the cache in milliseconds."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import date, timedelta

from app.answers.messages import Ask
from app.answers.schemas import ExplanationRequest, ExplanationResponse
from app.answers.service import AnswerService
from app.data.answer_cache import Wanted, uncached
from app.data.database import autocommit
from app.data.tenants import own_answer_policies
from app.errors import Shed
from app.locales import CANONICAL_QUESTIONS
from app.prompts import PROMPT_VERSION, answer_version


async def wanted(answers: AnswerService, today: date, days: int, tenant: str | None) -> list[Wanted]:
    assert answers.llm is not None, "precomputing needs an engine"
    async with autocommit(answers.db) as conn:
        versions = {
            tenant_id: answer_version(policy) for tenant_id, policy in (await own_answer_policies(conn)).items()
        }
        return await uncached(
            conn,
            since=today - timedelta(days=days),
            today=today,
            tenant=tenant,
            versions=versions,
            default_version=PROMPT_VERSION,
            engine_profile=answers.llm.profile,
            intents=sorted(CANONICAL_QUESTIONS),
        )


async def precompute(
    answers: AnswerService,
    todo: list[Wanted],
    today: date,
    on_done: Callable[[ExplanationResponse], None] = lambda answer: None,
) -> None:
    """Answer each statement's canonical question of each intent as of today; validated answers land
    in the cache. Paced by the fill's own rate (CACHE_FILL_RATE_PER_S): a refused token waits its
    Retry-After; being shed for any other reason (the engine is busy with people) is raised."""
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
        while True:
            ask = Ask(principal=principal, request=request, channel="batch", today=today, origin="fill")
            try:
                on_done(await answers.explain(ask))
                break
            except Shed as shed:
                if shed.status != 429:
                    raise
                await asyncio.sleep(shed.retry_after_s)
