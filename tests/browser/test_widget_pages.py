"""A long conversation in the widget after a reload (issue 34, item 3): the latest page of the
transcript, and the earlier ones above it, in order, one "Earlier messages" at a time."""

from __future__ import annotations

import uuid
from typing import Any

from playwright.async_api import Page, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from app.data import conversations
from app.domain.vocabulary import Role
from app.settings import Settings
from tests.browser.tongue import Tongue, bank_data
from tests.factories import customer, document
from tests.servers import Serve

ENV = {"ENGINE": "off", "DEMO_PAGE": "1", "API_KEY_CACHE_TTL": "0", "BATCH_WORKER": "0"}
COUNT = 120  # three pages of 50 (app/api/conversation_feed.py): 50, 50 and 20


async def test_a_long_conversation_shows_its_latest_page_and_pages_back(
    page: Page, make_tenant: Any, load: Any, engine: AsyncEngine, served: Serve, tongue: Tongue
) -> None:
    tenant = await make_tenant("interactive")
    await load(document(tenant.slug, [customer()]))
    cid = uuid.uuid4()
    async with engine.begin() as conn:
        await conversations.start(conn, tenant.id, cid, "C-1001", tongue.locale)
        for n in range(1, COUNT + 1):
            role: Role = "customer" if n % 2 else "agent"
            await conversations.append(conn, tenant.id, cid, role, f"message {n:03d}")
    server = served(Settings.from_env(ENV))
    # The widget restores the conversation its page kept (sessionStorage, per bank and customer).
    key = f"bill-assistant:conversation:{tenant.id}:C-1001"
    await page.add_init_script(f"sessionStorage.setItem({key!r}, {str(cid)!r})")
    await page.goto(tongue.demo(server.url, tenant.slug))
    shown = page.locator(".log .msg")
    await expect(shown).to_have_count(50)
    await expect(shown.first).to_contain_text("message 071")
    await expect(shown.last).to_contain_text("message 120")

    earlier = page.get_by_role("button", name=tongue.t("Earlier messages"))
    await earlier.click()
    await expect(shown).to_have_count(100)
    await earlier.click()
    await expect(shown).to_have_count(COUNT)
    await expect(earlier).to_be_hidden()  # the first page is shown: no earlier one
    texts = [t.strip() for t in await page.locator(".log .msg").all_inner_texts()]
    assert [t[-11:] for t in texts] == [f"message {n:03d}" for n in range(1, COUNT + 1)]
    await tongue.says_no_english(page, *bank_data(tenant.slug), "message")
