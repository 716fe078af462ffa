"""The widget says so when a turn could not be saved (issue 34, item 5): the answer stays on the screen,
and the alert below the transcript says, in the customer's language, that the message may not have
been saved. The database goes away after the answer was audited and while its turn is being written:
the write waits on the conversation's row (held here), then the proxy cuts every connection."""

from __future__ import annotations

import uuid
from typing import Any

from playwright.async_api import Page, expect
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.data import conversations
from app.prompts import render_notice
from app.settings import Settings
from tests.browser.tongue import Tongue, bank_data
from tests.db_proxy import DatabaseProxy, waiting_on_a_lock
from tests.servers import Serve
from tests.waiting import until

ENV = {"ENGINE": "off", "DEMO_PAGE": "1", "API_KEY_CACHE_TTL": "0", "BATCH_WORKER": "0"}


async def _conversation_of(engine: AsyncEngine, tenant_id: int) -> uuid.UUID | None:
    async with engine.connect() as conn:
        found: uuid.UUID | None = await conn.scalar(
            text("SELECT id FROM conversations WHERE tenant_id = :t AND last_seq = 2"), {"t": tenant_id}
        )
    return found


async def test_the_widget_says_a_turn_may_not_have_been_saved(
    page: Page, bank: Any, engine: AsyncEngine, database_proxy: tuple[DatabaseProxy, str], served: Serve, tongue: Tongue
) -> None:
    t = tongue.t
    cut, through = database_proxy
    server = served(Settings.from_env(ENV), through)
    lock = await engine.connect()
    try:
        await page.goto(tongue.demo(server.url, bank.slug))
        await expect(page.get_by_label(t("Card"))).to_have_value("A-1")
        await page.get_by_role("button", name=t("Why is my bill higher than last month?")).click()
        await expect(page.get_by_role("status")).to_have_text(t("Answer ready."))

        async def recorded() -> bool:
            return await _conversation_of(engine, bank.id) is not None

        await until("the first turn to be recorded", recorded)
        cid = await _conversation_of(engine, bank.id)
        assert cid is not None

        await lock.begin()
        assert await conversations.find(lock, bank.id, cid, lock=True) is not None
        await page.get_by_label(t("Your question")).fill(t("Did my payment arrive?"))
        await page.get_by_role("button", name=t("Send")).click()
        await until("the second turn's write to wait on the conversation", lambda: waiting_on_a_lock(engine))
        cut.set("refuse")

        alert = page.get_by_role("alert")
        await expect(alert).to_have_text(render_notice("not_saved", tongue.locale), timeout=15_000)
        await expect(alert).to_be_visible()
        await tongue.says_no_english(page, *bank_data(bank.slug))
        assert await page.locator(".msg.assistant").count() == 2  # the answer stays on the screen
    finally:
        await lock.rollback()
        await lock.close()
        cut.set("forward")
