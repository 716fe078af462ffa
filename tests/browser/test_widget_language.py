"""The widget speaks one language per conversation, and its status line says what happened, in
headless Chromium against the real service: a Chinese question on an English page turns the whole
widget Chinese (notes, buttons, status, the statement table); a verified answer after nothing was
shown says where it is from, not that it replaced something; the status line clears once a person
has the conversation; and in en-XA, the generated pseudo-locale, nothing on the widget or the demo
page is plain English but the data (tests/pseudo_locale.py): asking, a person's conversation, the
service's refusals."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from app import locales
from app.data.tenants import set_limits
from app.settings import Settings
from bench.fakes.sglang_server import RunningFake, Script
from tests.browser.helpers import pick_foreign_card, screenshot, widget_text
from tests.browser.tongue import BOTH, Tongue, bank_data
from tests.console import sign_in_page
from tests.pseudo_locale import PSEUDO, SOURCE, english_words, pseudo_locales
from tests.servers import Serve, ThreadedServer

pytestmark = pytest.mark.bank(agents=("ana",))
# What the widget shows as it is, in any language: the card, the currency's code, a merchant's name.
DATA = ("A-1", "EUR", "City Gym", "FreshMart", "C-1001", "Enter", "Shift+Enter")
DONE = "Done: you will see it on your next statement."  # what the agent writes, as it is
SERVICE = {
    "DEMO_PAGE": "1",
    "COOKIE_SECURE": "0",
    "BATCH_WORKER": "0",
    "ANSWER_CACHE_FILL": "0",
    "API_KEY_CACHE_TTL": "0",
}


@pytest.fixture
def serve(served: Serve) -> Serve:
    return lambda **env: served(Settings.from_env({**SERVICE, "ENGINE": "off", **env}))


async def ask(page: Page, question: str) -> None:
    await page.locator("textarea").fill(question)
    await page.locator("textarea").press("Enter")


async def sign_in_and_take(browser: Browser, server: ThreadedServer, bank: Any, tongue: Tongue) -> Page:
    """An agent signs in to the console and takes C-1001's waiting conversation."""
    t = tongue.t
    agent = await (await browser.new_context(viewport={"width": 1280, "height": 900})).new_page()
    await sign_in_page(agent, server.url, bank.slug)
    await agent.goto(f"{server.url}/console/queue")
    await agent.get_by_role("row").filter(has_text="C-1001").get_by_role("button", name=t("Take")).first.click()
    await expect(
        agent.get_by_role("heading", name=t("Conversation with {customer}", customer="C-1001"))
    ).to_be_visible()
    return agent


@pytest.mark.parametrize("tongue", BOTH, indirect=True)
async def test_a_chinese_conversation_on_an_english_page_shows_no_english(
    page: Page, serve: Any, bank: Any, tongue: Tongue
) -> None:
    t = tongue.t
    server = serve()
    await page.goto(tongue.demo(server.url, bank.slug))
    await expect(page.get_by_label(t("Card"))).to_have_value("A-1")
    await ask(page, "为什么这个月的账单比上个月高？")
    await expect(page.locator(".msg.assistant .answer[aria-busy=false]")).to_have_count(1)
    # Everything the customer now looks at is Chinese: the follow-ups, the status, the table, the form.
    await expect(page.get_by_role("button", name="什么时候到期？")).to_be_visible()
    await expect(page.get_by_role("status")).to_have_text("回答已完成。")
    await expect(page.locator("section")).to_have_attribute("lang", "zh-CN")
    await expect(page.locator("table.facts [data-field=drivers] li")).to_contain_text("比上月多12.00欧元")
    assert english_words(await widget_text(page), DATA) == []
    await screenshot(page, f"widget-language-zh-on-{tongue.locale}")

    # A question in the page's language turns it back.
    await ask(page, t("When is it due?"))
    await expect(page.locator(".msg.assistant .answer[aria-busy=false]")).to_have_count(2)
    await expect(page.get_by_role("button", name=t("When is it due?"))).to_be_visible()
    await expect(page.get_by_role("status")).to_have_text(t("Answer ready."))
    await tongue.says_no_english(page, *DATA, *bank_data(bank.slug))


async def test_a_verified_answer_after_nothing_was_shown_says_where_it_is_from(
    page: Page, serve: Any, bank: Any, fake_sglang: RunningFake, tongue: Tongue
) -> None:
    t = tongue.t
    # A charge question names no line: the plan requires no claim, so no word is shown before the
    # model's plan, which is refused.
    fake_sglang.fake.default = Script(text="not json")
    server = serve(ENGINE="sglang", SGLANG_URL=fake_sglang.url)
    await page.goto(tongue.demo(server.url, bank.slug))
    await expect(page.get_by_label(t("Card"))).to_have_value("A-1")
    await ask(page, tongue.write("What is this charge on my statement?"))
    answer = page.get_by_role("region", name=t("Answer"))
    await expect(answer).to_have_attribute("data-source", "fallback")
    await expect(page.locator(".msg.assistant .note")).to_have_text(t("Here is the answer from your statement."))
    replaced = t("We replaced the draft with an answer checked against your statement.")
    await expect(page.get_by_text(replaced)).to_have_count(0)
    await tongue.says_no_english(page, *DATA, *bank_data(bank.slug))


async def test_the_status_line_clears_when_a_person_has_the_conversation(
    browser: Browser, page: Page, serve: Any, bank: Any, tongue: Tongue
) -> None:
    t, write = tongue.t, tongue.write
    server = serve()
    await page.goto(tongue.demo(server.url, bank.slug))
    await expect(page.get_by_label(t("Card"))).to_have_value("A-1")
    await page.get_by_role("button", name=t("Why is my bill higher than last month?")).click()
    await expect(page.get_by_role("status")).to_have_text(t("Answer ready."))
    await ask(page, write("I want to speak to a person"))
    waiting = t("Waiting for an agent… You can keep writing here: your messages go to them.")
    await expect(page.get_by_text(waiting)).to_be_visible()
    await expect(page.get_by_role("status")).to_have_text("")  # not "Answer ready." under the handover

    agent = await sign_in_and_take(browser, server, bank, tongue)
    try:
        await expect(page.get_by_text(t("You are chatting with {name}.", name="Ana Agent"))).to_be_visible()
        await expect(page.get_by_role("status")).to_have_text("")
        await ask(page, write("Can you waive the gym fee?"))
        await expect(page.get_by_role("status")).to_have_text(t("Your message was passed to the agent."))
        await agent.get_by_label(t("Your reply (the customer reads it at once)")).fill(DONE)
        await agent.get_by_role("button", name=t("Send")).click()
        await expect(page.locator(".msg.agent")).to_have_count(1)
        await expect(page.get_by_role("status")).to_have_text("")  # the agent's reply is the news now
        await tongue.says_no_english(page, *DATA, *bank_data(bank.slug), DONE)
    finally:
        await agent.context.close()


@pytest.fixture
def pseudo_service(tmp_path: Path) -> Iterator[Path]:
    """The service reads its locales, en-XA among them, from a generated folder: the database takes
    a conversation in it as it is (no CHECK names the locales since migration 0023)."""
    with pseudo_locales(tmp_path / "locales") as folder:
        yield folder


async def test_in_the_pseudo_locale_every_string_passes_through_the_locale(
    browser: Browser, page: Page, serve: Any, bank: Any, pseudo_service: Path
) -> None:
    server = serve(CONVERSATION_UNANSWERED_MAX="1")  # one message to the agent, then wait for a reply
    await page.goto(f"{server.url}/demo?bank={bank.slug}&customer=C-1001&locale={PSEUDO}")
    await expect(page.locator("select")).to_have_value("A-1")
    brand = (await page.locator("header strong").inner_text()).strip()
    # The customer clicks the quick questions, in en-XA: its lexicon reads them (tests/pseudo_locale.py).
    quick = locales.words(PSEUDO)["widget"]
    asked = (quick["suggested"][0], quick["followUps"][1], quick["followUps"][2])
    allowed = (*DATA, brand)
    # The page and the widget before a word is asked, then an answer, a follow-up and a handover.
    assert english_words(await page.locator("body").inner_text(), allowed) == []
    assert english_words(await widget_text(page), allowed) == []
    await page.get_by_role("button", name=asked[0]).click()
    await expect(page.locator(".msg.assistant .answer[aria-busy=false]")).to_have_count(1)
    # Read as the bill change it is: the answer's table holds what changed the bill.
    await expect(page.locator("table.facts [data-field=drivers] li").first).to_be_visible()
    await expect(page.locator(".msg.assistant")).to_have_attribute("lang", PSEUDO)
    assert english_words(await widget_text(page), allowed) == []
    await page.get_by_role("button", name=asked[1]).click()
    await expect(page.locator(".msg.assistant .answer[aria-busy=false]")).to_have_count(2)
    assert english_words(await widget_text(page), allowed) == []
    await page.get_by_role("button", name=asked[2]).click()
    await expect(page.locator(".banner")).to_be_visible()
    agent = await sign_in_and_take(browser, server, bank, Tongue(SOURCE))
    try:
        await expect(page.locator(".banner.agent")).to_be_visible()
        assert english_words(await widget_text(page), (*allowed, "Ana Agent")) == []
        await screenshot(page, "widget-pseudo-locale")
        # With the agent: the agent writing, their reply, the customer's message passed on, and one too many.
        said, status = locales.words(PSEUDO)["widget"], page.get_by_role("status")
        await agent.get_by_label("Your reply").press_sequentially("Let me look.")
        await expect(status).to_have_text(said["agentWriting"].replace("{name}", "Ana Agent"))
        await agent.get_by_role("button", name="Send").click()
        await expect(page.locator(".msg.agent")).to_contain_text("Let me look.")
        await ask(page, asked[0])
        await expect(status).to_have_text(said["delivered"])
        await ask(page, asked[1])
        await expect(page.get_by_role("alert")).to_contain_text(said["tooManyMessages"].split("{s}")[0])
        assert english_words(await widget_text(page), (*allowed, "Ana Agent", "Let me look.")) == []
    finally:
        await agent.context.close()


async def test_in_the_pseudo_locale_every_refusal_passes_through_the_locale(
    page: Page, serve: Any, bank: Any, engine: AsyncEngine, pseudo_service: Path
) -> None:
    """What the widget says when the service refuses a question, or cannot be reached, is the
    locale's: a question it cannot read (a control character pasted in), a card that is not the
    customer's, a lost connection, the bank's rate."""
    server = serve()
    said = locales.words(PSEUDO)["widget"]
    await page.goto(f"{server.url}/demo?bank={bank.slug}&customer=C-1001&locale={PSEUDO}")
    await expect(page.locator("select")).to_have_value("A-1")
    async with page.expect_response("**/v1/chat") as response:
        await ask(page, "Why is my bill \x0bhigher?")
    assert (await response.value).status == 400
    await expect(page.get_by_role("alert")).to_have_text(said["invalid"])
    await page.locator("textarea").fill("")
    await pick_foreign_card(page, "B-1")  # C-2002's
    await page.get_by_role("button", name=said["suggested"][1]).click()
    await expect(page.get_by_role("alert")).to_have_text(said["notFound"])
    await page.context.set_offline(True)
    await page.get_by_role("button", name=said["suggested"][1]).click()
    await expect(page.get_by_role("alert")).to_have_text(said["network"])
    assert english_words(await widget_text(page), (*DATA, "B-1")) == []
    await page.context.set_offline(False)
    await page.locator("select").select_option("A-1")
    async with engine.begin() as conn:
        await set_limits(conn, bank.slug, {"rate_limit_per_s": 0.001})  # one more, then 429
    await page.get_by_role("button", name=said["suggested"][1]).click()
    await expect(page.locator(".msg.assistant .answer[aria-busy=false]")).to_have_count(1)
    await page.get_by_role("button", name=said["followUps"][1]).click()
    await expect(page.get_by_role("alert")).to_contain_text(said["rateLimited"].split("{s}")[0])
    assert english_words(await widget_text(page), DATA) == []


async def test_on_a_phone_the_statement_table_is_read_whole(
    browser: Browser, serve: Any, bank: Any, tongue: Tongue
) -> None:
    """At 375x667 the conversation is part of the page, which scrolls: no scroll area inside the widget
    cuts the statement table off."""
    server = serve()
    context = await browser.new_context(viewport={"width": 375, "height": 667}, is_mobile=True, has_touch=True)
    page = await context.new_page()
    try:
        await page.goto(tongue.demo(server.url, bank.slug))
        await expect(page.get_by_label(tongue.t("Card"))).to_have_value("A-1")
        await page.get_by_role("button", name=tongue.t("Why is my bill higher than last month?")).click()
        await expect(page.get_by_role("status")).to_have_text(tongue.t("Answer ready."))
        table = page.locator("table.facts")
        await table.scroll_into_view_if_needed()
        await expect(table).to_be_in_viewport(ratio=0.99)  # all of it at once (but sub-pixel rounding)
        log = await page.get_by_role("log").evaluate("log => [log.scrollHeight, log.clientHeight]")
        assert log[0] <= log[1], f"the transcript scrolls inside the widget: {log}"
        box = await table.bounding_box()
        assert box is not None
        assert box["x"] >= 0
        assert box["x"] + box["width"] <= 375
        await screenshot(page, "widget-phone-table")
    finally:
        await context.close()
