"""The batch worker: answers job items at batch priority, so it never delays people.

It runs inside the service (started in the app's lifespan). Items are leased from Postgres, so
several replicas can share the work and a job interrupted by a restart is finished after it.
"""

from __future__ import annotations

import asyncio
from datetime import date

import msgspec
import structlog

from app.answers.messages import Ask
from app.answers.schemas import ExplanationRequest
from app.answers.service import AnswerService
from app.data.database import autocommit
from app.data.jobs import ClaimedItem, claim_items, finish_item, release_item
from app.errors import NotFound, Shed, UnreadableData
from app.locales import CANONICAL_QUESTIONS, default

DEFAULT_QUESTION = CANONICAL_QUESTIONS["bill_change"][default()]
log = structlog.get_logger("bill_assistant.batch")


def item_request(item: dict[str, object]) -> ExplanationRequest:
    """A job item as an explanation request (also how items are checked when the job is submitted)."""
    return msgspec.convert({"question": DEFAULT_QUESTION, **item, "channel": "batch"}, ExplanationRequest)


class BatchWorker:
    def __init__(self, answers: AnswerService, *, concurrency: int = 2) -> None:
        self.answers, self.settings, self.db = answers, answers.settings, answers.db
        self.concurrency = concurrency

    async def run_forever(self) -> None:
        while True:
            try:
                if await self.run_once() == 0:
                    await asyncio.sleep(self.settings.batch.poll_s)
            except asyncio.CancelledError:
                raise
            except Exception:  # a bad pass must not stop the worker; log it and go on
                log.exception("batch pass failed")
                await asyncio.sleep(self.settings.batch.poll_s)

    async def run_once(self) -> int:
        async with autocommit(self.db) as conn:
            items = await claim_items(conn, self.concurrency, self.settings.batch.lease_s)
        await asyncio.gather(*(self._answer(item) for item in items))
        return len(items)

    async def _answer(self, item: ClaimedItem) -> None:
        result, error = None, None
        try:
            principal = await self.answers.tenant(item.tenant_id)
            if principal is None:
                error = "the tenant no longer exists"
            else:
                request = item_request(item.request)
                ask = Ask(principal=principal, request=request, channel="batch", today=date.today(), origin="job")
                result = msgspec.json.encode(await self.answers.explain(ask)).decode()
        except NotFound as exc:
            error = f"not_found: {exc}"
        except msgspec.ValidationError as exc:
            error = f"invalid: {exc}"
        except UnreadableData as exc:
            error = f"unreadable_data: {exc}"
        except Shed:  # the engine is busy with people: the item waits for another pass
            async with autocommit(self.db) as conn:
                await release_item(conn, item)
            await asyncio.sleep(self.settings.batch.poll_s)
            return
        async with autocommit(self.db) as conn:
            await finish_item(conn, item, result, error)
