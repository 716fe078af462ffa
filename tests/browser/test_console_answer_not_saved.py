"""The console says so when a streamed answer could not be audited (issue 34, item 5): the audit
row's insert waits on a lock held here, then the proxy cuts every connection of the app; the stream
ends with an `error` event and the status line tells the agent the answer was not saved (before: it
stayed at "Writing…")."""

from __future__ import annotations

from typing import Any

from playwright.async_api import Page, expect
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.settings import Settings
from tests.browser.tongue import Tongue, bank_data
from tests.console import sign_in_page
from tests.db_proxy import DatabaseProxy, waiting_on_a_lock
from tests.servers import Serve
from tests.waiting import until

ENV = {"ENGINE": "off", "COOKIE_SECURE": "0", "API_KEY_CACHE_TTL": "0", "BATCH_WORKER": "0"}


async def test_the_console_says_a_streamed_answer_was_not_saved(
    page: Page,
    make_bank: Any,
    engine: AsyncEngine,
    database_proxy: tuple[DatabaseProxy, str],
    served: Serve,
    tongue: Tongue,
) -> None:
    t = tongue.t
    tenant = await make_bank(agents=("ana",))
    cut, through = database_proxy
    server = served(Settings.from_env(ENV), through)
    lock = await engine.connect()
    try:
        await sign_in_page(page, server.url, tenant.slug)
        await page.goto(f"{server.url}/console/accounts/A-1")
        await page.get_by_label(t("Question, as the customer put it")).fill(t("Did my payment arrive?"))
        await lock.begin()
        await lock.execute(text("LOCK TABLE answers IN SHARE ROW EXCLUSIVE MODE"))  # the audit's insert waits
        await page.get_by_role("button", name=t("Ask")).click()
        await until("the answer's audit to wait on the lock", lambda: waiting_on_a_lock(engine))
        cut.set("refuse")
        said = t("Not saved: the database was lost before this answer was audited. Ask again.")
        await expect(page.locator("#live-status")).to_have_text(said, timeout=15_000)
        await tongue.says_no_english(page, *bank_data(tenant.slug))
    finally:
        await lock.rollback()
        await lock.close()
        cut.set("forward")
