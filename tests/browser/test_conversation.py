"""The widget as a conversation, in headless Chromium against the real service (no model: ENGINE=off
answers deterministically): a follow-up takes its subject from the turn before, a customer who asks
for a person waits, an agent takes the conversation in the console and the reply reaches the widget
live (and the customer's messages reach the agent), a reload restores both sides, a Chinese question
on an English page is answered in Chinese, and an ambiguous question is asked back with buttons."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from app import locales
from app.data.database import autocommit
from app.data.history import load_history
from app.domain.facts import compute_facts
from app.prompts import change, phrases, render_notice
from app.settings import Settings
from tests.browser.helpers import screenshot
from tests.browser.tongue import BOTH, Tongue, bank_data
from tests.console import sign_in_page
from tests.factories import CAFE_LOVER, customer
from tests.servers import Serve, ThreadedServer

HAN = re.compile(r"[\u4e00-\u9fff]")
# What the agent writes, shown as it is in any language.
HELLO = "Hello Ann, I am looking at your statement now."
DONE = "Done: you will see it on your next statement."
pytestmark = pytest.mark.bank(customer(), CAFE_LOVER, agents=("ana",))


@pytest.fixture
async def other_bank(make_bank: Any) -> Any:
    """Another bank, with its own agent (and its own C-1001)."""
    return await make_bank(agents=("ana",))


@pytest.fixture
def server(served: Serve) -> ThreadedServer:
    env = {
        "ENGINE": "off",
        "DEMO_PAGE": "1",
        "COOKIE_SECURE": "0",
        "BATCH_WORKER": "0",
        "ANSWER_CACHE_FILL": "0",
        "API_KEY_CACHE_TTL": "0",
    }
    return served(Settings.from_env(env))


async def open_demo(
    page: Page, server: ThreadedServer, bank: Any, tongue: Tongue, customer_ref: str = "C-1001"
) -> None:
    await page.goto(tongue.demo(server.url, bank.slug, customer_ref))
    await expect(page.get_by_label(tongue.t("Card"))).not_to_have_value("")


async def answered(page: Page, n: int, tongue: Tongue) -> None:
    """The widget's transcript holds n finished assistant messages."""
    await expect(page.locator(".msg.assistant .answer[aria-busy=false]")).to_have_count(n)
    await expect(page.get_by_role("status")).to_have_text(tongue.t("Answer ready."))


@pytest.mark.parametrize("tongue", BOTH, indirect=True)
async def test_a_follow_up_then_a_person_replies_live(
    browser: Browser,
    page: Page,
    server: ThreadedServer,
    bank: Any,
    other_bank: Any,
    engine: AsyncEngine,
    tongue: Tongue,
) -> None:
    t, write, locale = tongue.t, tongue.write, tongue.locale
    person, thanks = write("I want to speak to a person"), write("Thank you! Can you waive the gym fee?")
    data = (*bank_data(bank.slug), HELLO, DONE)
    await open_demo(page, server, bank, tongue)
    answer = page.get_by_role("region", name=t("Answer"))  # the latest answer
    await page.get_by_role("button", name=t("Why is my bill higher than last month?")).click()
    await answered(page, 1, tongue)
    await expect(answer).to_contain_text("12.00 EUR")

    # "And why?" continues the bill's change: its cause, the driver's label and amount from the facts.
    async with autocommit(engine) as conn:
        history = await load_history(conn, bank.id, "A-1", None, date.today())
    assert history is not None
    facts = compute_facts(history, date.today())
    labels, _ = phrases(facts.drivers, facts.payment.status, locale)
    driver_line = (
        f"{labels[0]}: {change(facts.drivers[0].amount, 'EUR', locale)}"  # "…: 12.00 EUR more than last month"
    )
    await page.get_by_role("button", name=t("And why?")).click()
    await answered(page, 2, tongue)
    await expect(answer).to_contain_text(labels[0])  # purchases at “City Gym”
    await expect(answer).to_contain_text(f"{facts.drivers[0].amount} EUR")
    await expect(page.locator("table.facts").last.locator("[data-field=drivers] li")).to_have_text([driver_line])
    await tongue.says_no_english(page, *data)

    # Asking for a person: the conversation waits for an agent, and the widget says so.
    await page.get_by_label(t("Your question")).fill(person)
    await page.get_by_label(t("Your question")).press("Enter")
    waiting = t("Waiting for an agent… You can keep writing here: your messages go to them.")
    await expect(page.get_by_text(waiting)).to_be_visible()
    await expect(page.get_by_role("button", name=t("And why?"))).to_have_count(0)  # no quick replies now
    await tongue.says_no_english(page, *data)
    await screenshot(page, "conversation-waiting")

    agents = await browser.new_context(viewport={"width": 1280, "height": 900})
    other = await browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        # Another bank's agent never sees it.
        stranger = await other.new_page()
        await sign_in_page(stranger, server.url, other_bank.slug)
        await stranger.goto(f"{server.url}/console/queue")
        await expect(stranger.get_by_text(t("Nobody is waiting."))).to_be_visible()
        await expect(stranger.locator("#queue tr")).to_have_count(0)

        # The bank's agent takes it from the queue and replies.
        agent = await agents.new_page()
        await sign_in_page(agent, server.url, bank.slug)
        await agent.goto(f"{server.url}/console/queue")
        row = agent.get_by_role("row").filter(has_text="C-1001")
        await expect(row).to_contain_text(person)
        await tongue.says_no_english(agent, *data)
        await screenshot(agent, "conversation-queue")
        await row.get_by_role("button", name=t("Take")).click()
        await expect(
            agent.get_by_role("heading", name=t("Conversation with {customer}", customer="C-1001"))
        ).to_be_visible()
        await expect(agent.locator("#transcript")).to_contain_text(t("And why?"))

        # The customer's widget shows it at once, without a reload.
        joined = render_notice("joined", locale, name="Ana Agent")
        with_ana = t("You are chatting with {name}.", name="Ana Agent")
        await expect(page.get_by_role("log")).to_contain_text(joined)
        await expect(page.get_by_text(with_ana)).to_be_visible()
        await agent.get_by_label(t("Your reply (the customer reads it at once)")).fill(HELLO)
        await agent.get_by_role("button", name=t("Send")).click()
        reply = page.locator(".msg.agent").filter(has_text=HELLO)
        await expect(reply).to_be_visible()
        await expect(reply).to_contain_text("Ana Agent")

        # The customer's next message goes to the agent, whose page shows it live.
        await page.get_by_label(t("Your question")).fill(thanks)
        await page.get_by_label(t("Your question")).press("Enter")
        await expect(page.get_by_role("status")).to_have_text(t("Your message was passed to the agent."))
        await expect(agent.locator("#transcript")).to_contain_text(thanks)
        await expect(page.locator(".msg.assistant")).to_have_count(3)  # the assistant stays out of it
        await tongue.says_no_english(page, *data)
        await tongue.says_no_english(agent, *data)
        await screenshot(page, "conversation-agent")
        await screenshot(agent, "conversation-console")

        # A reload restores the transcript and the agent's side, and the feed goes on.
        await page.reload()
        log = page.get_by_role("log")
        for said in (t("Why is my bill higher than last month?"), t("And why?"), person, joined, HELLO, thanks):
            await expect(log).to_contain_text(said)
        await expect(page.locator(".msg")).to_have_count(9)  # each message once
        await expect(page.locator(".msg.assistant").nth(1)).to_contain_text(labels[0])  # the answers, as they were
        await expect(page.locator(".msg.assistant").nth(1).locator("[data-field=drivers] li")).to_have_text(
            [driver_line]
        )
        await expect(page.get_by_text(with_ana)).to_be_visible()
        await agent.get_by_label(t("Your reply (the customer reads it at once)")).fill(DONE)
        await agent.get_by_role("button", name=t("Send")).click()
        await expect(page.locator(".msg.agent")).to_have_count(2)
        await expect(page.locator(".msg.agent").last).to_contain_text(DONE)
        await tongue.says_no_english(page, *data)

        # The agent's page survives a reload too; another bank's agent cannot open it.
        await agent.reload()
        await expect(agent.locator("#transcript")).to_contain_text(DONE)
        await tongue.says_no_english(agent, *data)
        await screenshot(page, "conversation-restored")
        opened = await stranger.goto(agent.url)
        assert opened is not None
        assert opened.status == 404
        await expect(stranger.get_by_text("Hello Ann")).to_have_count(0)

        # The agent hands the customer back: the assistant answers again, with its quick replies.
        await agent.get_by_role("button", name=t("Hand back to the assistant")).click()
        await expect(page.get_by_role("log")).to_contain_text(render_notice("back", locale))
        await expect(page.get_by_text(with_ana)).to_be_hidden()
        await page.get_by_role("button", name=t("When is it due?")).click()
        await answered(page, 4, tongue)
        await expect(answer).to_contain_text(locales.day(date(2026, 11, 25), locale))
        await tongue.says_no_english(page, *data)

        # Another customer on the same browser tab starts with an empty transcript.
        await open_demo(page, server, bank, tongue, "C-3003")
        await expect(page.get_by_role("button", name=t("Why is my bill higher than last month?"))).to_be_visible()
        await expect(page.locator(".msg")).to_have_count(0)
    finally:
        await agents.close()
        await other.close()


@pytest.mark.parametrize("tongue", BOTH, indirect=True)
async def test_a_chinese_question_on_an_english_page_is_answered_in_chinese(
    page: Page, server: ThreadedServer, bank: Any, tongue: Tongue
) -> None:
    await open_demo(page, server, bank, tongue)
    await expect(page.get_by_role("heading", name=tongue.t("Questions about your bill"))).to_be_visible()
    await page.get_by_label(tongue.t("Your question")).fill("为什么这个月的账单比上个月高？")
    await page.get_by_label(tongue.t("Your question")).press("Enter")
    await expect(page.locator(".msg.assistant .answer[aria-busy=false]")).to_have_count(1)
    await expect(page.get_by_role("status")).to_have_text("回答已完成。")  # the conversation is Chinese now
    answer = page.get_by_role("region", name="回答")
    await expect(answer).to_have_text(HAN)
    await expect(answer).to_contain_text("12.00")
    assert not re.search(r"\b(the|your|bill)\b", await answer.inner_text())
    # The answer's own facts are labelled in its language, and it says which language it is in.
    await expect(page.locator(".msg.assistant")).to_have_attribute("lang", "zh-CN")
    await expect(page.locator("table.facts")).to_contain_text("本期余额")
    await screenshot(page, "conversation-zh-on-en")


async def test_an_ambiguous_question_is_asked_back_with_buttons(
    page: Page, server: ThreadedServer, bank: Any, tongue: Tongue
) -> None:
    t, write = tongue.t, tongue.write
    await open_demo(page, server, bank, tongue, "C-3003")
    # The merchants' names are as the statement writes them, in any language.
    await page.get_by_label(t("Your question")).fill(f"{write('what is the')} cafe {write('one?')}")
    await page.get_by_label(t("Your question")).press("Enter")
    await answered(page, 1, tongue)
    choices = page.get_by_role("group", name=t("Choose one"))
    await expect(choices.get_by_role("button")).to_have_text(["Blue Cafe", "Cafe Nero"])
    await expect(page.locator("table.facts")).to_have_count(0)  # a question back is not an answer
    await screenshot(page, "conversation-clarify")

    await choices.get_by_role("button", name="Cafe Nero").click()
    await answered(page, 2, tongue)
    await expect(page.locator(".msg.customer").last).to_contain_text("Cafe Nero")
    answer = page.get_by_role("region", name=t("Answer"))
    await expect(answer).to_contain_text("Cafe Nero")
    await expect(answer).to_contain_text("4.80 EUR")
    await expect(answer).not_to_contain_text("Blue Cafe")
    await tongue.says_no_english(page, *bank_data(bank.slug), "K-1", "C-3003", "Cafe Nero", "Blue Cafe", "cafe")
    await screenshot(page, "conversation-clarified")

    # A new conversation starts afresh, and a reload does not bring the old one back.
    await page.get_by_role("button", name=t("New conversation")).click()
    await expect(page.locator(".msg")).to_have_count(0)
    await expect(page.get_by_role("button", name=t("Why is my bill higher than last month?"))).to_be_visible()
    await page.reload()
    await expect(page.get_by_label(t("Card"))).to_have_value("K-1")
    await expect(page.locator(".msg")).to_have_count(0)
