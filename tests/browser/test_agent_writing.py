"""In headless Chromium, a customer and an agent: while the agent types a reply in the console, the
customer's widget says "<agent> is writing…" on its status line; once the reply is sent, the status
line clears and the reply is in the chat."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.async_api import Browser, expect

from tests.browser.helpers import screenshot
from tests.browser.tongue import Tongue, bank_data
from tests.console import console_settings, sign_in_page
from tests.servers import Serve, ThreadedServer

pytestmark = pytest.mark.bank(agents=("ana",))
REPLY = "Let me look at your statement."  # what the agent types, as it is


@pytest.fixture
def server(served: Serve) -> ThreadedServer:
    return served(console_settings(DEMO_PAGE="1", API_KEY_CACHE_TTL="0"))


async def test_the_customer_sees_the_agent_writing_then_the_reply(
    browser: Browser, server: ThreadedServer, bank: Any, tongue: Tongue
) -> None:
    t = tongue.t
    customers = await browser.new_context(viewport={"width": 1280, "height": 900})
    agents = await browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = await customers.new_page()
        await page.goto(tongue.demo(server.url, bank.slug))
        await page.get_by_label(t("Your question")).fill(t("Speak to a person"))
        await page.get_by_label(t("Your question")).press("Enter")
        await expect(
            page.get_by_text(t("Waiting for an agent… You can keep writing here: your messages go to them."))
        ).to_be_visible()

        agent = await agents.new_page()
        await sign_in_page(agent, server.url, bank.slug)
        await agent.goto(f"{server.url}/console/queue")
        await agent.get_by_role("button", name=t("Take")).first.click()
        await expect(page.get_by_text(t("You are chatting with {name}.", name="Ana Agent"))).to_be_visible()
        status = page.get_by_role("status")
        await expect(status).to_have_text("")

        await agent.get_by_label(t("Your reply (the customer reads it at once)")).press_sequentially(REPLY)
        await expect(status).to_have_text(t("{name} is writing…", name="Ana Agent"))
        await tongue.says_no_english(page, *bank_data(bank.slug))
        await screenshot(page, "widget-agent-writing")
        await agent.get_by_role("button", name=t("Send")).click()
        await expect(page.locator(".msg.agent")).to_contain_text(REPLY)
        await expect(status).to_have_text("")
        await tongue.says_no_english(page, *bank_data(bank.slug), REPLY)
        await tongue.says_no_english(agent, *bank_data(bank.slug), REPLY)
    finally:
        await agents.close()
        await customers.close()
