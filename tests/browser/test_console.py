"""The agent console in headless Chromium: sign in, find the customer, read the statement comparison
(exactly the computed facts), ask, and read the answer's waterfall; refusals read clearly; a phone-
sized screen does not scroll sideways."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.console.views import reason_words, statement_view
from app.data.database import autocommit
from app.data.history import load_history
from app.domain.facts import compute_facts
from app.domain.reasons import Reason
from app.settings import Settings
from bench.fakes.plans import CHANGE_UP, DRIVER_1_UP, GOOD_SHOWN, plan
from bench.fakes.sglang_server import RunningFake, Script
from tests.browser.helpers import screenshot
from tests.browser.tongue import BOTH, Tongue, bank_data
from tests.chat_streams import BAD
from tests.console import sign_in_page
from tests.factories import account, customer, document, tx
from tests.pseudo_locale import SOURCE
from tests.servers import Serve, ThreadedServer
from tests.waiting import until

# What the model writes (a plan of four claims, so the page sees it stream claim by claim) and what the
# agent reads; nothing in it depends on the date (the console asks about today).
ANSWER = plan(CHANGE_UP, DRIVER_1_UP, {"claim": "period"}, {"claim": "next_step", "action": "agent"})
SHOWN = (
    GOOD_SHOWN + " This statement covers 1 October 2026 to 31 October 2026."
    " If anything is unclear, you can ask to speak to an agent."  # the agent's console is no chat
)
# A long merchant name and a long question: the narrow screen must wrap them, not scroll.
LONG_MERCHANT = "Supercalifragilistic Online Subscriptions International Ltd"
BO = customer(
    "C-2002", accounts=[account("B-1", transactions=[tx("T-9", "2026-10-20", "purchase", "7.50", LONG_MERCHANT)])]
)
pytestmark = pytest.mark.bank(customer(), BO | {"name": "Bo Chen"}, agents=("ana",))
ENGINE = "sglang"  # what the answer's page names of the engine, as it is
# The answer's figures and merchant, as they are in any language.
FIGURES = ("12.00 EUR", "124.99 EUR", "112.99 EUR", "City Gym")


@pytest.fixture
def server(served: Serve, fake_sglang: RunningFake) -> ThreadedServer:
    """The service with the fake SGLang as its engine, so answers go through every model stage."""
    fake_sglang.fake.default = Script(text=ANSWER)
    env = {
        "ENGINE": "sglang",
        "SGLANG_URL": fake_sglang.url,
        "COOKIE_SECURE": "0",
        "BATCH_WORKER": "0",
        "ANSWER_CACHE_FILL": "0",
    }
    return served(Settings.from_env(env))


@pytest.mark.parametrize("tongue", BOTH, indirect=True)
async def test_an_agent_asks_and_reads_the_answers_waterfall(
    page: Page, server: ThreadedServer, bank: Any, engine: AsyncEngine, fake_sglang: RunningFake, tongue: Tongue
) -> None:
    t, data = tongue.t, (*bank_data(bank.slug), "Bo Chen", "B-1", "C-2002", ENGINE)
    await sign_in_page(page, server.url, bank.slug)
    await expect(page.get_by_role("heading", name=t("Find a customer"))).to_be_visible()
    await expect(page.get_by_text("Ana Agent")).to_be_visible()

    await page.get_by_label(t("Customer reference or name")).fill("ann")
    await page.get_by_role("button", name=t("Search")).click()
    await expect(page.get_by_role("heading", name="Ann Lee C-1001")).to_be_visible()
    await tongue.says_no_english(page, *data, "ann")
    await screenshot(page, "console-search")
    await page.get_by_role("link", name="A-1", exact=True).click()
    await expect(page.get_by_role("heading", name=t("Account {ref}", ref="A-1"))).to_be_visible()

    # Every figure on the page is the one computed from the database, without any model.
    async with autocommit(engine) as conn:
        history = await load_history(conn, bank.id, "A-1", None, date.today())
    assert history is not None
    facts = statement_view(compute_facts(history, date.today()))
    balances, payment = page.locator("#balances"), page.locator("#payment")
    for table, label, value in [
        (balances, "Previous balance", facts.previous_balance),
        (balances, "New balance", facts.new_balance),
        (balances, "Difference", facts.difference),
        (payment, "Status", facts.payment_status),
        (payment, "Outstanding", facts.outstanding),
        (payment, "Minimum due", facts.minimum_due),
        (payment, "Due date", facts.due_date),
    ]:
        await expect(table.get_by_role("row", name=t(label)).get_by_role("cell")).to_have_text(value)
    drivers = page.locator("#drivers tbody tr")
    await expect(drivers).to_have_count(len(facts.drivers))
    for i, line in enumerate(facts.drivers):
        await expect(drivers.nth(i)).to_have_text(f"{line.label}{line.amount}")
    assert (facts.previous_balance, facts.new_balance, facts.difference) == ("112.99 EUR", "124.99 EUR", "+12.00 EUR")
    await tongue.says_no_english(page, *data)
    await screenshot(page, "console-account")

    await page.get_by_label(t("Question, as the customer put it")).fill(t("Why is my bill higher than last month?"))
    await expect(page.get_by_label(t("Answer language"))).to_have_value(SOURCE)  # Ann's
    await page.get_by_label(t("Answer language")).select_option(tongue.locale)
    fake_sglang.fake.default = Script(text=ANSWER, token_delay_s=0.04)
    await page.get_by_role("button", name=t("Ask")).click()
    # The answer streams into the page as the model writes it, then links to its audited page.
    live = page.locator("#live-answer")
    lengths = set()

    async def answered() -> bool:  # sampling the text as it grows
        if await page.locator("#live-status").inner_text() == t("Answered (source: {source}).", source=t("model")):
            return True
        lengths.add(len(await live.inner_text()))
        return False

    await until("the answer to finish streaming", answered, every_s=0.03)
    assert len(lengths - {0}) >= 3, lengths  # in pieces, not at once
    shown = tongue.said(SHOWN, *FIGURES)
    await expect(live).to_have_text(shown)
    await tongue.says_no_english(page, *data)
    await screenshot(page, "console-streamed")
    await page.get_by_role("link", name=t("Validation, tokens and latency waterfall of this answer")).click()

    await expect(page.get_by_role("heading", name=t("Answer"), exact=True)).to_be_visible()
    await expect(page.locator("#source")).to_have_text(t("model"))
    passed = t("Passed: every claim of the model's plan held against the facts, said in reviewed wordings")
    await expect(page.locator("#validation")).to_have_text(passed)
    await expect(page.get_by_text(shown)).to_be_visible()
    await tongue.says_no_english(page, *data)
    waterfall = page.get_by_role(
        "table", name=tongue.before("Where the {total} went, stage by stage from the request’s arrival", "total")
    )
    await expect(waterfall).to_be_visible()
    rows = waterfall.locator("tbody tr")
    stages = [await rows.nth(i).get_attribute("data-stage") for i in range(await rows.count())]
    assert {"auth", "admission", "db", "facts", "prompt", "engine", "queue", "ttft", "decode"} <= set(stages)
    bars = waterfall.locator("rect.bar")
    await expect(bars).to_have_count(len(stages))
    for i in range(len(stages)):
        box = await bars.nth(i).bounding_box()
        assert box is not None
        assert box["width"] > 0, stages[i]
    ms = tongue.pattern("{ms} ms", ms=r"[\d.,]+")
    await expect(waterfall.locator('tr[data-stage="engine"] td')).to_have_text([ms] * 2 + [""])
    await screenshot(page, "console-answer")

    await page.get_by_role("button", name=t("Regenerate")).click()
    await expect(page.locator("#source")).to_have_text(t("model"))  # asked again, not the cache
    await page.get_by_role("link", name=t("Account {ref}", ref="A-1")).click()
    answers = page.get_by_role("table", name=t("Answers about this account, newest first"))
    await expect(answers).to_contain_text(t("console"))

    await page.get_by_role("button", name=t("Sign out")).click()
    await expect(page.get_by_role("heading", name=t("Sign in"))).to_be_visible()
    await page.goto(f"{server.url}/console/accounts/A-1")
    await expect(page.get_by_role("heading", name=t("Sign in"))).to_be_visible()


async def test_an_answer_refused_as_it_streams_is_replaced_and_the_agent_is_told_why(
    page: Page, server: ThreadedServer, bank: Any, fake_sglang: RunningFake, tongue: Tongue
) -> None:
    """The model's plan says Ann has paid; she has not. What was said before it stands, the rest is the
    deterministic answer, and the page says which rule refused the model and what exactly failed, in
    the console's words."""
    t = tongue.t
    fake_sglang.fake.default = Script(text=BAD)
    await sign_in_page(page, server.url, bank.slug)
    await page.goto(f"{server.url}/console/accounts/A-1")
    await page.get_by_label(t("Question, as the customer put it")).fill(t("Why is my bill higher than last month?"))
    await page.get_by_label(t("Answer language")).select_option(tongue.locale)
    await page.get_by_role("button", name=t("Ask")).click()
    await expect(page.locator("#live-status")).to_have_text(t("Answered (source: {source}).", source=t("fallback")))
    # Unpaid or overdue, by today's date: "(the model stated … (it said Paid; the facts say Unpaid))".
    why = [
        reason_words(Reason(rule="status_claim", detail="status_said", values={"claimed_status": "paid", "status": s}))
        for s in ("unpaid", "overdue")
    ]
    replaced = "The model's answer failed validation ({reason}); the deterministic answer replaced it."
    await expect(page.locator("#live-note")).to_have_text(
        tongue.pattern(replaced, reason="|".join(map(re.escape, why)))
    )
    await expect(page.locator("#live-details")).to_be_visible()
    await tongue.says_no_english(page, *bank_data(bank.slug), "Bo Chen", "B-1", "C-2002")


async def test_a_wrong_password_is_refused_with_a_message(
    page: Page, server: ThreadedServer, bank: Any, tongue: Tongue
) -> None:
    t = tongue.t
    await sign_in_page(page, server.url, bank.slug, password="not the password")
    await expect(page.get_by_role("alert")).to_have_text(
        t("Sign-in failed: the bank, username and password do not match an active agent.")
    )
    await expect(page.get_by_label(t("Username"))).to_have_value("ana")
    await expect(page.get_by_label(t("Password"))).to_have_value("")
    await tongue.says_no_english(page, "ana", bank.slug)
    await screenshot(page, "console-wrong-password")


async def test_another_banks_account_is_not_found(
    page: Page, server: ThreadedServer, bank: Any, make_tenant: Any, load: Any, tongue: Tongue
) -> None:
    t = tongue.t
    other = await make_tenant()
    await load(document(other.slug, [customer("C-7", accounts=[account("THEIRS-7")])]))
    await sign_in_page(page, server.url, bank.slug)
    response = await page.goto(f"{server.url}/console/accounts/THEIRS-7")
    assert response is not None
    assert response.status == 404
    await expect(page.get_by_role("heading", name=t("Not found"))).to_be_visible()
    # The same page as for an account that does not exist: nothing says the other bank's is there.
    await expect(page.get_by_role("alert")).to_have_text(
        t("There is no such page for your bank: the account, answer, conversation or article it names is not there.")
    )
    await tongue.says_no_english(page, *bank_data(bank.slug))
    await screenshot(page, "console-not-found")


async def test_the_account_page_fits_a_phone_screen(
    browser: Browser, server: ThreadedServer, bank: Any, tongue: Tongue
) -> None:
    t = tongue.t
    context = await browser.new_context(viewport={"width": 390, "height": 844}, locale="en-GB")
    page = await context.new_page()
    try:
        await sign_in_page(page, server.url, bank.slug)
        await page.goto(f"{server.url}/console/accounts/B-1")
        await expect(page.get_by_role("row", name=LONG_MERCHANT)).to_be_visible()
        question = tongue.write("What is ") + LONG_MERCHANT + "?" * 3
        await page.get_by_label(t("Question, as the customer put it")).fill(question)
        await page.get_by_role("button", name=t("Ask")).click()
        answered = tongue.pattern("Answered (source: {source}).", source=".+")
        await expect(page.locator("#live-status")).to_have_text(answered)
        await page.reload()
        answers = page.get_by_role("table", name=t("Answers about this account, newest first"))
        await expect(answers).to_contain_text(LONG_MERCHANT)
        widths = await page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert widths[0] <= widths[1], widths
        await tongue.says_no_english(page, *bank_data(bank.slug), "Bo Chen", "B-1", "C-2002", LONG_MERCHANT)
        await screenshot(page, "console-account-narrow")
        await page.keyboard.press("Tab")  # the skip link comes first and shows when focused
        await expect(page.get_by_role("link", name=t("Skip to the content"))).to_be_focused()
    finally:
        await context.close()
