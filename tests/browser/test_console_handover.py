"""The console's handover in headless Chromium: a conversation handed over appears in the queue
without a reload and its wait ticks; the agent takes it, reads the customer's new messages as they
are written, replies, and hands it back. No script error and no CSP refusal on the way."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from playwright.async_api import Page, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from app.data import conversations, handovers
from app.prompts import render_notice
from app.settings import Settings
from tests.browser.helpers import screenshot
from tests.browser.tongue import Tongue, bank_data
from tests.console import sign_in_page
from tests.servers import Serve, ThreadedServer

pytestmark = pytest.mark.bank(agents=("ana",))
# What the customer and the agent write, shown as it is in any language.
ASKED = "Can I talk to a <b>person</b>?"
WROTE = "Thanks, my bill went up."
REPLY = "Let me look at it with you."


@pytest.fixture
def server(served: Serve) -> ThreadedServer:
    env = {"ENGINE": "off", "COOKIE_SECURE": "0", "BATCH_WORKER": "0", "ANSWER_CACHE_FILL": "0"}
    return served(Settings.from_env(env))


async def test_an_agent_takes_a_waiting_conversation_and_talks_live(
    page: Page, server: ThreadedServer, bank: Any, engine: AsyncEngine, tongue: Tongue
) -> None:
    t, data = tongue.t, (*bank_data(bank.slug), ASKED, WROTE, REPLY)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"{m.text} {m.location['url']}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    await sign_in_page(page, server.url, bank.slug)
    await page.get_by_role("link", name=t("Waiting conversations")).click()
    await expect(page.get_by_role("heading", name=t("Waiting conversations"))).to_be_visible()
    await expect(page.get_by_text(t("Nobody is waiting."))).to_be_visible()

    cid = uuid.uuid4()  # handed over while the page is open: it appears without a reload
    async with engine.begin() as conn:
        await conversations.start(conn, bank.id, cid, "C-1001", tongue.locale)
        await conversations.append(conn, bank.id, cid, "customer", ASKED)
        await handovers.hand_over(conn, bank.id, cid, "requested")
    row = page.locator(f'#queue tr[data-id="{cid}"]')
    await expect(row).to_contain_text(ASKED, timeout=5000)
    await expect(row).to_contain_text(t("The customer asked for a person"))
    await expect(page.get_by_text(t("Nobody is waiting."))).to_be_hidden()
    wait = row.locator(".waited")
    first = await wait.inner_text()
    await expect(wait).not_to_have_text(first, timeout=3000)  # it ticks
    await tongue.says_no_english(page, *data)
    await screenshot(page, "console-queue")

    await row.get_by_role("button", name=t("Take")).click()
    await expect(page.get_by_role("heading", name=t("Conversation with {customer}", customer="C-1001"))).to_be_visible()
    await expect(page.locator("#status")).to_have_text(t("With {agent}", agent="Ana Agent"))
    transcript = page.locator("#transcript li")
    await expect(transcript).to_have_count(2)
    await expect(transcript.nth(1)).to_contain_text(render_notice("joined", tongue.locale, name="Ana Agent"))

    async with engine.begin() as conn:  # the customer writes: it appears without a reload
        await conversations.append(conn, bank.id, cid, "customer", WROTE)
    await expect(transcript).to_have_count(3, timeout=5000)
    await expect(transcript.nth(2)).to_contain_text(t("Customer"))
    await expect(transcript.nth(2)).to_contain_text(WROTE)

    await page.get_by_label(t("Your reply (the customer reads it at once)")).fill(REPLY)
    await page.get_by_role("button", name=t("Send")).click()
    await expect(transcript).to_have_count(4)
    await expect(transcript.nth(3)).to_contain_text(REPLY)
    await tongue.says_no_english(page, *data)
    await screenshot(page, "console-conversation")
    async with engine.begin() as conn:
        said = await conversations.messages(conn, bank.id, cid)
    assert [m.role for m in said] == ["customer", "system", "customer", "agent"]

    await page.get_by_role("button", name=t("Hand back to the assistant")).click()
    await expect(page.get_by_role("heading", name=t("Waiting conversations"))).to_be_visible()
    await expect(page.get_by_text(t("Nobody is waiting."))).to_be_visible()
    await page.goto(f"{server.url}/console/conversations/{cid}")
    await expect(page.locator("#status")).to_have_text(t("With the assistant"))
    await expect(page.locator("#transcript li").last).to_contain_text(render_notice("back", tongue.locale))
    await tongue.says_no_english(page, *data)
    assert [p for p in problems if not p.endswith("/favicon.ico")] == []  # the console has no icon
