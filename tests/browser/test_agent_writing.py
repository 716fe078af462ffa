"""In headless Chromium, a customer and an agent: while the agent types a reply in the console, the
customer's widget says "<agent> is writing…" on its status line; once the reply is sent, the status
line clears and the reply is in the chat."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.async_api import Browser, expect

from tests.browser.helpers import screenshot
from tests.console import console_settings, sign_in_page
from tests.servers import Serve, ThreadedServer

pytestmark = pytest.mark.bank(agents=("ana",))


@pytest.fixture
def server(served: Serve) -> ThreadedServer:
    return served(console_settings(DEMO_PAGE="1", API_KEY_CACHE_TTL="0"))


async def test_the_customer_sees_the_agent_writing_then_the_reply(
    browser: Browser, server: ThreadedServer, bank: Any
) -> None:
    customers = await browser.new_context(viewport={"width": 1280, "height": 900})
    agents = await browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = await customers.new_page()
        await page.goto(f"{server.url}/demo?bank={bank.slug}&customer=C-1001")
        await page.get_by_label("Your question").fill("I want to speak to a person")
        await page.get_by_label("Your question").press("Enter")
        await expect(page.get_by_text("Waiting for an agent…")).to_be_visible()

        agent = await agents.new_page()
        await sign_in_page(agent, server.url, bank.slug)
        await agent.goto(f"{server.url}/console/queue")
        await agent.get_by_role("button", name="Take").first.click()
        await expect(page.get_by_text("You are chatting with Ana Agent.")).to_be_visible()
        status = page.get_by_role("status")
        await expect(status).to_have_text("")

        await agent.get_by_label("Your reply").press_sequentially("Let me look at your statement.")
        await expect(status).to_have_text("Ana Agent is writing…")
        await screenshot(page, "widget-agent-writing")
        await agent.get_by_role("button", name="Send").click()
        await expect(page.locator(".msg.agent")).to_contain_text("Let me look at your statement.")
        await expect(status).to_have_text("")
    finally:
        await agents.close()
        await customers.close()
