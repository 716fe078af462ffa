"""The console speaks the locale whose folder says so ("console": true), and nothing else: with en-XA,
the generated pseudo-locale (tests/pseudo_locale.py), as the console's locale, an agent comes from
the service's front page, signs in (once wrongly), watches the queue fill as a customer asks for a
person, takes the conversation and reads what the customer writes next as it arrives, replies, finds
the customer, reads the account, asks about it (the answer streams in through console.js), reads the
audited answer, the help library and an article, and a page that is not there. On every page no
word is plain English but the data: names, references, merchants, the bank's own article, what was
typed."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect

from app import locales
from app.domain.knowledge import ArticleIn
from app.settings import Settings
from bench.fakes.sglang_server import RunningFake, Script
from tests.browser.helpers import screenshot
from tests.browser.tongue import Tongue, bank_data
from tests.chat_streams import BAD
from tests.console import PASSWORD
from tests.pseudo_locale import PSEUDO
from tests.servers import Serve

ARTICLE = ArticleIn(
    id="dispute-how",
    locale="en",
    title="Disputing a charge",
    body="To dispute a charge, open it in the app and choose Dispute.",
    tags=["interest"],
    questions=["how do I dispute a charge"],
)
pytestmark = pytest.mark.bank(agents=("ana",), library=(ARTICLE,))
QUESTION = "Why is my bill higher than last month?"
# What the answer's page shows of the engine as it is: the engine's name.
ENGINE = "sglang"
REPLY = "Let me look."
# What the console shows as it is, in any language, besides the bank's own (tests/browser/tongue.py
# `bank_data`): the bank's article, what the agent typed.
DATA = (ARTICLE.id, ARTICLE.title, ARTICLE.body, *ARTICLE.tags, QUESTION, REPLY)


async def says_no_english(page: Page, bank: Any, *data: str) -> None:
    await Tongue(PSEUDO).says_no_english(page, *bank_data(bank.slug), *DATA, *data)


async def test_in_the_pseudo_locale_every_console_page_passes_through_the_locale(
    browser: Browser, served: Serve, bank: Any, tongue: Tongue
) -> None:
    server = served(
        Settings.from_env(
            {"ENGINE": "off", "COOKIE_SECURE": "0", "BATCH_WORKER": "0", "DEMO_PAGE": "1", "API_KEY_CACHE_TTL": "0"}
        )
    )
    w, widget = locales.words(PSEUDO)["console"], locales.words(PSEUDO)["widget"]
    agent = await (await browser.new_context(viewport={"width": 1280, "height": 900})).new_page()
    customer = await (await browser.new_context(viewport={"width": 1280, "height": 900})).new_page()

    # The service's front page, then signing in, once with a wrong password.
    await agent.goto(f"{server.url}/")
    await expect(agent.locator("html")).to_have_attribute("lang", PSEUDO)
    await says_no_english(agent, bank)
    await agent.get_by_role("link", name=w["home"]["console_link"]).click()
    await expect(agent.locator("html")).to_have_attribute("lang", PSEUDO)
    await agent.locator("#tenant").fill(bank.slug)
    await agent.locator("#username").fill("ana")
    await agent.locator("#password").fill("not the password")
    await agent.locator("button[type=submit]").click()
    await expect(agent.get_by_role("alert")).to_have_text(w["errors"]["wrong_login"])
    await says_no_english(agent, bank)
    await agent.locator("#password").fill(PASSWORD)
    await agent.locator("button[type=submit]").click()
    await expect(agent.get_by_role("heading", level=1)).to_have_text(w["page"]["find"])
    await says_no_english(agent, bank)

    # The queue, empty, then filled by its script as the customer asks for a person.
    await agent.goto(f"{server.url}/console/queue")
    await expect(agent.locator("#queue-empty")).to_have_text(w["page"]["queue"]["empty"])
    await says_no_english(agent, bank)
    await customer.goto(f"{server.url}/demo?bank={bank.slug}&customer=C-1001&locale={PSEUDO}")
    await expect(customer.locator("select")).to_have_value("A-1")
    await customer.get_by_role("button", name=widget["suggested"][0]).click()
    await expect(customer.locator(".msg.assistant .answer[aria-busy=false]")).to_have_count(1)
    await customer.get_by_role("button", name=widget["followUps"][2]).click()
    await expect(customer.locator(".banner")).to_be_visible()
    row = agent.locator("#queue tr")
    await expect(row).to_have_count(1, timeout=10_000)
    await expect(row.locator(".reason")).to_have_text(w["handover_reason"]["requested"])
    await says_no_english(agent, bank)

    # The conversation: taken, the customer's next message arriving through the feed, a reply.
    await row.get_by_role("button").click()
    title = w["page"]["conversation"]["title"].replace("{customer}", "C-1001")
    await expect(agent.get_by_role("heading", level=1)).to_have_text(title)
    await says_no_english(agent, bank)
    shown = await agent.locator("#transcript li").count()
    await customer.locator("textarea").fill(widget["suggested"][1])
    await customer.locator("textarea").press("Enter")
    await expect(agent.locator("#transcript li")).to_have_count(shown + 1)
    await says_no_english(agent, bank)
    await agent.locator("#text").fill(REPLY)
    await agent.locator("form.stack button[type=submit]").click()
    await expect(agent.locator("#transcript li.agent")).to_contain_text(REPLY)
    await says_no_english(agent, bank)
    await screenshot(agent, "console-pseudo-locale")

    # Finding the customer, her account, a question streamed and its audited answer.
    await agent.goto(f"{server.url}/console?q=C-1001")
    await expect(agent.locator("ul.customers li")).to_have_count(2)  # Ann, and her one account
    await says_no_english(agent, bank)
    await agent.goto(f"{server.url}/console/accounts/A-1")
    # Ann prefers en, and an answer's language may be en: shown by its own name too (`bank_data`).
    await says_no_english(agent, bank)
    await agent.locator("#question").fill(QUESTION)
    await agent.locator("#locale").select_option(PSEUDO)
    await agent.locator("form[data-stream] button[type=submit]").click()
    await expect(agent.locator("#live-details")).to_be_visible()
    await says_no_english(agent, bank)
    await agent.locator("#live-details").click()
    await expect(agent.locator("#source")).to_have_text(w["source"]["fallback"])
    await says_no_english(agent, bank)

    # The help library, an article, and a page that is not there.
    await agent.goto(f"{server.url}/console/library")
    await says_no_english(agent, bank)  # the article's language
    await agent.goto(f"{server.url}/console/library/en/{ARTICLE.id}")
    await says_no_english(agent, bank)
    response = await agent.goto(f"{server.url}/console/accounts/B-404")
    assert response is not None
    assert response.status == 404
    await expect(agent.get_by_role("alert")).to_have_text(w["errors"]["not_found_message"])
    await says_no_english(agent, bank)


async def test_in_the_pseudo_locale_a_refused_answer_says_why_in_the_locale(
    browser: Browser, served: Serve, bank: Any, tongue: Tongue, fake_sglang: RunningFake
) -> None:
    """The model's plan says Ann has paid (she has not): the live note and the audited answer's page
    say which rule refused it and what exactly failed (the status it said, the facts' status), and
    the plan it wrote, all in the console's words."""
    fake_sglang.fake.default = Script(text=BAD)
    env = {"ENGINE": "sglang", "SGLANG_URL": fake_sglang.url, "COOKIE_SECURE": "0", "BATCH_WORKER": "0"}
    server = served(Settings.from_env({**env, "ANSWER_CACHE_FILL": "0"}))
    w = locales.words(PSEUDO)["console"]
    agent = await (await browser.new_context(viewport={"width": 1280, "height": 900})).new_page()
    await agent.goto(f"{server.url}/console")
    await agent.locator("#tenant").fill(bank.slug)
    await agent.locator("#username").fill("ana")
    await agent.locator("#password").fill(PASSWORD)
    await agent.locator("button[type=submit]").click()
    await expect(agent.get_by_role("heading", level=1)).to_have_text(w["page"]["find"])

    await agent.goto(f"{server.url}/console/accounts/A-1")
    await agent.locator("#question").fill(QUESTION)
    await agent.locator("#locale").select_option(PSEUDO)
    await agent.locator("form[data-stream] button[type=submit]").click()
    await expect(agent.locator("#live-details")).to_be_visible()
    said = w["payment_status"]
    await expect(agent.locator("#live-note")).to_contain_text(w["fallback_reason"]["status_claim"])
    await expect(agent.locator("#live-note")).to_contain_text(said["paid"])
    await says_no_english(agent, bank)

    await agent.locator("#live-details").click()
    await expect(agent.locator("#source")).to_have_text(w["source"]["fallback"])
    await expect(agent.locator("body")).to_contain_text(w["claim_kind"]["payment_status"])
    await says_no_english(agent, bank, ENGINE)
    await screenshot(agent, "console-pseudo-locale-refused")
