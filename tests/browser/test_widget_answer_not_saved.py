"""The widget says so when an answer could not be saved (issue 34, item 5): the audit row's insert
waits on a lock held here, then the proxy cuts every connection of the app. The stream ends with an
`error` event; the alert says, in the customer's language, that the message may not have been
saved (before: the stream broke off and the widget said the connection was lost)."""

from __future__ import annotations

from typing import Any

from playwright.async_api import Page, expect
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.prompts import render_notice
from app.settings import Settings
from tests.browser.tongue import Tongue, bank_data
from tests.db_proxy import DatabaseProxy, waiting_on_a_lock
from tests.servers import Serve
from tests.waiting import until

ENV = {"ENGINE": "off", "DEMO_PAGE": "1", "API_KEY_CACHE_TTL": "0", "BATCH_WORKER": "0"}


async def test_the_widget_says_an_answer_may_not_have_been_saved(
    page: Page, bank: Any, engine: AsyncEngine, database_proxy: tuple[DatabaseProxy, str], served: Serve, tongue: Tongue
) -> None:
    t = tongue.t
    cut, through = database_proxy
    server = served(Settings.from_env(ENV), through)
    lock = await engine.connect()
    try:
        await page.goto(tongue.demo(server.url, bank.slug))
        await expect(page.get_by_label(t("Card"))).to_have_value("A-1")
        await lock.begin()
        await lock.execute(text("LOCK TABLE answers IN SHARE ROW EXCLUSIVE MODE"))  # the audit's insert waits
        await page.get_by_role("button", name=t("Why is my bill higher than last month?")).click()
        await until("the answer's audit to wait on the lock", lambda: waiting_on_a_lock(engine))
        cut.set("refuse")

        alert = page.get_by_role("alert")
        await expect(alert).to_have_text(render_notice("not_saved", tongue.locale), timeout=15_000)
        await expect(alert).to_be_visible()
        await tongue.says_no_english(page, *bank_data(bank.slug))
        await expect(page.get_by_role("status")).to_have_text("")
    finally:
        await lock.rollback()
        await lock.close()
        cut.set("forward")
