"""The answer cache filled on schedule: when a statement closes (loaded by an import, whatever
wrote it), its canonical answers for each intent, in the customer's locale, are made at batch
priority behind every person, so that the first questions after it are hits.

Every replica runs the loop; each pass, only the holder of the fill lease (app/data/fill_leader.py)
fills, so with several replicas exactly one does the work, and another takes over within a lease
when it stops. A pass answers what app/answers/precompute.py `wanted` lists — recently closed
statements without an answer cached at their data version — one at a time; an answer that did not
validate is not asked again in this process until its statement changes. The backlog is the
`bill_assistant_cache_fill_backlog` gauge.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import date

import structlog

from app.answers.precompute import precompute, wanted
from app.answers.service import AnswerService
from app.data.answer_cache import Wanted
from app.data.database import autocommit
from app.data.fill_leader import hold, let_go
from app.errors import DatabaseUnavailable, Shed
from app.metrics import CACHE_FILL_BACKLOG

log = structlog.get_logger("bill_assistant.cache_fill")
DAYS = 45  # statements that closed within this many days
LEASE_MIN_S = 60.0


class CacheFiller:
    def __init__(self, answers: AnswerService, *, interval_s: float) -> None:
        self.answers, self.interval_s = answers, interval_s
        # Renewed every pass and before every answer; long enough that one slow answer (the engine's
        # timeout is 20 s) never lets another replica start the same work.
        self.lease_s = max(3 * interval_s, LEASE_MIN_S)
        self.replica = uuid.uuid4().hex
        self._tried: set[tuple[int, int, str]] = set()  # (statement, data version, intent) that fell back

    async def run_forever(self) -> None:
        try:
            while True:
                try:
                    await self.run_once(date.today())
                except DatabaseUnavailable:
                    log.warning("cache fill: the database is unavailable; next pass later")
                except Exception:
                    log.exception("cache fill pass failed")
                await asyncio.sleep(self.interval_s)
        finally:
            CACHE_FILL_BACKLOG.set(0)
            try:
                async with autocommit(self.answers.db) as conn:
                    await let_go(conn, self.replica)
            except DatabaseUnavailable:
                pass  # the lease runs out on its own

    async def run_once(self, today: date) -> int:
        """One pass if this replica holds the lease: the canonical answers made (0 otherwise)."""
        if not await self._lead():
            CACHE_FILL_BACKLOG.set(0)
            return 0
        todo = [w for w in await wanted(self.answers, today, DAYS, None) if self._key(w) not in self._tried]
        CACHE_FILL_BACKLOG.set(len(todo))
        made = 0
        for item in todo:
            if not await self._lead():  # lost the lease (a long pass, a pause): another replica fills
                break
            try:
                await precompute(self.answers, [item], today, on_done=lambda answer: None)
            except Shed:
                break  # the engine is busy with people: the next pass goes on
            self._tried.add(self._key(item))
            made += 1
            CACHE_FILL_BACKLOG.dec()
        return made

    async def _lead(self) -> bool:
        async with autocommit(self.answers.db) as conn:
            return await hold(conn, self.replica, self.lease_s)

    @staticmethod
    def _key(item: Wanted) -> tuple[int, int, str]:
        return item.statement_id, item.data_version, item.intent
