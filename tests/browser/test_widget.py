"""The chat widget on the demo bank page, in headless Chromium: the answer streams in, its amounts
are the facts', a phone-sized screen works, and every refusal reads as a clear message."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, Page, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from app.data.database import autocommit
from app.data.history import load_history
from app.data.knowledge import import_library
from app.data.tenants import set_limits
from app.domain.facts import compute_facts
from app.domain.knowledge import ArticleIn
from app.prompts import phrases
from app.settings import Settings
from bench.fakes.plans import CHANGE_UP, DRIVER_1_UP, GOOD_SHOWN, plan
from bench.fakes.sglang_server import FakeSGLang, RunningFake, Script
from tests.browser.helpers import pick_foreign_card, screenshot
from tests.factories import account, customer, document
from tests.servers import Serve, ThreadedServer
from tests.waiting import until

# What the model writes (a plan of four claims) and what the customer reads (each claim in its reviewed
# wording, the facts filled in), claim by claim once the plan holds the change and its cause. The widget
# asks about today, so nothing here depends on the date (the payment status and the due date's tense do).
PERIOD = {"claim": "period"}
ANSWER = plan(CHANGE_UP, DRIVER_1_UP, PERIOD, {"claim": "next_step", "action": "agent"})
SHOWN = (
    GOOD_SHOWN + " This statement covers 1 October 2026 to 31 October 2026."
    " If anything is unclear, you can ask to speak to an agent here in the chat."
)
pytestmark = pytest.mark.bank(customer(), customer("C-2002", accounts=[account("B-1")]))


def payment_plans(fake: FakeSGLang) -> Callable[[str], Script | None]:
    """For a payment question, the plan a truthful model writes, at the pace (and after the hang) of
    `fake`'s default script: the status the prompt's FACTS give (the date decides it); None (the
    default script) for any other question."""

    def pick(prompt: str) -> Script | None:
        if "START WITH: payment_status" not in prompt:
            return None
        status = re.findall(r"^payment status: (\w+)$", prompt, re.M)[-1]  # the examples come first
        return dataclasses.replace(fake.default, text=plan({"claim": "payment_status", "status": status}, PERIOD))

    return pick


@pytest.fixture
def serve(served: Serve, fake_sglang: RunningFake) -> Serve:
    """Starts the service (the fake SGLang as its engine, the demo page on) with extra settings."""

    def start(**extra: str) -> ThreadedServer:
        env = {
            "ENGINE": "sglang",
            "SGLANG_URL": fake_sglang.url,
            "DEMO_PAGE": "1",
            "API_KEY_CACHE_TTL": "0",
            "ANSWER_CACHE_FILL": "0",
            **extra,
        }
        return served(Settings.from_env(env))

    return start


async def today_history(engine: AsyncEngine, bank: Any) -> Any:
    """A-1's records as the widget reads them: as of today."""
    async with autocommit(engine) as conn:
        history = await load_history(conn, bank.id, "A-1", None, date.today())
    assert history is not None
    return history


async def open_demo(page: Page, server: ThreadedServer, bank: Any, customer_ref: str = "C-1001") -> None:
    await page.goto(f"{server.url}/demo?bank={bank.slug}&customer={customer_ref}")
    await expect(page.get_by_label("Card")).to_have_value("A-1" if customer_ref == "C-1001" else "B-1")


async def test_the_answer_streams_in_and_its_amounts_are_the_facts(
    page: Page, serve: Any, bank: Any, fake_sglang: RunningFake, engine: AsyncEngine
) -> None:
    fake_sglang.fake.default = Script(text=ANSWER, token_delay_s=0.05)
    server = serve()
    await open_demo(page, server, bank)
    await page.get_by_role("button", name="Why is my bill higher than last month?").click()

    answer = page.get_by_role("region", name="Answer")
    await expect(page.get_by_role("status")).to_have_text("Writing your answer…")
    # The transcript is busy (a screen reader reads the answer once it is whole), the dots show it.
    await expect(page.get_by_role("log")).to_have_attribute("aria-busy", "true")
    await expect(page.locator(".msg.assistant .typing")).to_be_visible()
    lengths = set()

    async def answered() -> bool:  # sampling the text as it grows
        if await answer.get_attribute("data-source") is not None:
            return True
        lengths.add(len(await answer.inner_text()))
        return False

    await until("the answer to finish streaming", answered, every_s=0.03)
    assert len(lengths - {0}) >= 3, lengths  # it arrived claim by claim, not at once
    await expect(answer).to_have_attribute("data-source", "model")
    await expect(answer).to_have_text(SHOWN)
    await expect(page.get_by_role("status")).to_have_text("Answer ready.")
    await expect(page.get_by_role("log")).to_have_attribute("aria-busy", "false")
    await expect(page.locator(".msg.assistant .typing")).to_be_hidden()

    # The table shows exactly the facts computed from the database.
    facts = compute_facts(await today_history(engine, bank), date.today())
    labels, status = phrases(facts.drivers, facts.payment.status, "en")
    table = page.locator("table.facts")
    assert await table.locator("[data-field=current]").inner_text() == f"{facts.statement.new_balance} EUR"
    assert await table.locator("[data-field=previous]").inner_text() == f"{facts.previous_balance} EUR"
    assert await table.locator("[data-field=difference]").inner_text() == f"+{facts.difference} EUR"
    assert await table.locator("[data-field=minimum_due]").inner_text() == f"{facts.statement.minimum_due} EUR"
    assert await table.locator("[data-field=status]").inner_text() == status
    assert await table.locator("[data-field=drivers] li").all_inner_texts() == [
        f"{label}: {d.amount} EUR more than last month" for label, d in zip(labels, facts.drivers, strict=True)
    ]
    assert facts.statement.new_balance == Decimal("124.99")
    assert facts.difference == Decimal("12.00")
    await screenshot(page, "widget-answer")


async def test_a_narrow_phone_screen_works_with_the_keyboard(
    browser: Browser, serve: Any, bank: Any, fake_sglang: RunningFake
) -> None:
    fake_sglang.fake.default = Script(text=ANSWER)
    server = serve()
    context = await browser.new_context(viewport={"width": 360, "height": 740}, is_mobile=True, has_touch=True)
    page = await context.new_page()
    try:
        await open_demo(page, server, bank)
        # Shift+Enter starts a new line; Enter sends.
        question = page.get_by_label("Your question")
        await question.fill("Why is my bill")
        await question.press("Shift+Enter")
        await question.press_sequentially("higher?")
        await expect(question).to_have_value("Why is my bill\nhigher?")
        await expect(page.locator(".msg.customer")).to_have_count(0)  # nothing sent yet
        await question.press("Enter")
        await expect(question).to_have_value("")
        await expect(page.get_by_role("log").get_by_text("Why is my bill\nhigher?")).to_be_visible()
        await expect(page.get_by_role("region", name="Answer")).to_have_text(SHOWN)
        # The quick replies are the follow-ups now, in reach of the keyboard.
        await expect(page.get_by_role("button", name="And why?")).to_be_visible()
        width = await page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert width[0] <= width[1], f"horizontal scrolling: {width}"
        box = await page.locator("[data-bill-assistant]").bounding_box()
        assert box is not None
        assert box["x"] >= 0
        assert box["x"] + box["width"] <= 360
        await screenshot(page, "widget-phone")
    finally:
        await context.close()


async def test_a_new_question_stops_the_answer_being_written(
    page: Page, serve: Any, bank: Any, fake_sglang: RunningFake, engine: AsyncEngine
) -> None:
    # The first answer goes on for long once its required claims are said (a claim that never closes).
    endless = ', {"claim": "period"' + ', "note": 1' * 300
    fake_sglang.fake.scripts.append(Script(text=endless, token_delay_s=0.05))
    fake_sglang.fake.answer_for = payment_plans(fake_sglang.fake)
    server = serve()
    await open_demo(page, server, bank)
    await page.get_by_role("button", name="Why is my bill higher than last month?").click()
    answer = page.get_by_role("region", name="Answer")
    await expect(answer).not_to_have_text("")  # the first answer is being written, slowly
    await page.get_by_role("button", name="Did my payment arrive?").click()
    facts = compute_facts(await today_history(engine, bank), date.today())
    _, status = phrases(facts.drivers, facts.payment.status, "en")
    # The status first, what an answer of that status holds (it depends on today's date), the model's own last.
    await expect(answer).to_have_text(
        re.compile(
            rf"^The payment status of this statement: {re.escape(status)}\. .*"
            r" This statement covers 1 October 2026 to 31 October 2026\.$"
        )
    )
    first = fake_sglang.fake.requests[0]["rid"]
    # The browser closed the first stream: the engine was told to stop.
    await until("the first stream's abort", lambda: first in fake_sglang.fake.aborted)


async def test_a_claim_that_fails_its_check_never_reaches_the_page(
    page: Page, serve: Any, bank: Any, fake_sglang: RunningFake
) -> None:
    """The plan's third claim contradicts the facts (it says the bill is paid; it is unpaid): a log of
    every change to the answer's text proves the page never showed it; the engine request was aborted
    and the verified answer replaced the claims already said."""
    paid = {"claim": "payment_status", "status": "paid"}
    text = plan(CHANGE_UP, DRIVER_1_UP, paid, {"claim": "period"}, {"claim": "next_step", "action": "agent"})
    fake_sglang.fake.default = Script(text=text, token_delay_s=0.03)
    server = serve()
    await open_demo(page, server, bank)
    await page.evaluate(
        """() => {
            window.shown = [];
            const root = document.querySelector("[data-bill-assistant]").shadowRoot;
            const record = () => window.shown.push(root.querySelector(".answer")?.textContent ?? "");
            new MutationObserver(record).observe(root, {subtree: true, childList: true, characterData: true});
        }"""
    )
    await page.get_by_role("button", name="Why is my bill higher than last month?").click()
    answer = page.get_by_role("region", name="Answer")
    await expect(answer).to_have_attribute("data-source", "fallback")
    shown: list[str] = await page.evaluate("window.shown")
    assert any(GOOD_SHOWN in text for text in shown)  # the change and its cause, said before the contradiction
    assert [text for text in shown if "payment status" in text] == []
    assert [text for text in shown if "paid in full" in text] == []
    assert "{" not in "".join(shown)  # no unfilled slot either
    await expect(answer).to_contain_text("12.00 EUR more than the 112.99 EUR on your previous statement")
    rid = fake_sglang.fake.requests[-1]["rid"]
    # The engine stopped writing at the failing claim.
    await until("the engine's abort", lambda: rid in fake_sglang.fake.aborted)


class BankSite:
    """The bank's own site, on another origin than the assistant: a page that embeds the widget."""

    def __init__(self) -> None:
        self.html = b""
        self.server = ThreadedServer(self, lifespan="off")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = [(b"content-type", b"text/html; charset=utf-8")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": self.html})

    async def embed(self, assistant: str, api_key: str, customer_ref: str = "C-1001") -> None:
        # What the bank's backend does: ask for the customer's token with its API key.
        async with httpx.AsyncClient(base_url=assistant) as client:
            r = await client.post(
                "/v1/sessions", json={"customer_ref": customer_ref}, headers={"Authorization": f"Bearer {api_key}"}
            )
        token = r.json()["token"]
        self.html = f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Bank</title></head>
            <body><h1>Your card</h1><div data-bill-assistant data-token="{token}" data-endpoint="{assistant}"></div>
            <script src="{assistant}/static/widget.js" defer></script></body></html>""".encode()


@pytest.mark.parametrize("allowed", [True, False])
async def test_the_widget_embeds_on_the_banks_own_site(
    page: Page, serve: Any, bank: Any, fake_sglang: RunningFake, allowed: bool
) -> None:
    fake_sglang.fake.default = Script(text=ANSWER)
    site = BankSite()
    try:
        # The assistant lets the bank's origin call it from the browser (CORS), or does not.
        server = serve(WIDGET_ORIGINS=site.server.url if allowed else "https://elsewhere.example")
        await site.embed(server.url, bank.key)
        await page.goto(site.server.url)
        if not allowed:  # the browser refuses the cross-origin call: nothing leaks, the widget says so
            await expect(page.get_by_role("alert")).to_have_text(
                "The connection was lost. Check your internet connection and try again."
            )
            return
        await expect(page.get_by_label("Card")).to_have_value("A-1")
        await page.get_by_role("button", name="Why is my bill higher than last month?").click()
        await expect(page.get_by_role("region", name="Answer")).to_have_text(SHOWN)
        await screenshot(page, "widget-on-bank-site")
    finally:
        site.server.stop()


async def test_an_expired_session_says_so(page: Page, serve: Any, bank: Any) -> None:
    server = serve(SESSION_TTL_S="1.5")
    await open_demo(page, server, bank)
    await asyncio.sleep(1.6)
    await page.get_by_role("button", name="Did my payment arrive?").click()
    await expect(page.get_by_role("alert")).to_have_text(
        "Your session has expired. Please reload the page to continue."
    )
    await screenshot(page, "widget-expired")


async def test_rate_limits_and_overload_are_clear_messages(
    browser: Browser, serve: Any, bank: Any, fake_sglang: RunningFake, engine: AsyncEngine
) -> None:
    fake_sglang.fake.default = Script(text=ANSWER, hang_s=2.0)
    fake_sglang.fake.answer_for = payment_plans(fake_sglang.fake)
    # One engine slot, a short queue: while one question is answered, the next is refused (503).
    server = serve(ENGINE_CAPACITY="1", QUEUE_DEADLINE_SCALE="0.01")
    first, second = await browser.new_page(), await browser.new_page()
    try:
        await open_demo(first, server, bank)
        await open_demo(second, server, bank, "C-2002")
        await first.get_by_role("button", name="Did my payment arrive?").click()
        await expect(first.get_by_role("status")).to_have_text("Writing your answer…")
        await second.get_by_role("button", name="Did my payment arrive?").click()
        await expect(second.get_by_role("alert")).to_contain_text("We are very busy right now. Please try again in")
        await screenshot(second, "widget-busy")
        await expect(first.get_by_role("region", name="Answer")).to_have_attribute(
            "data-source", "model", timeout=10_000
        )

        async with engine.begin() as conn:
            await set_limits(conn, bank.slug, {"rate_limit_per_s": 0.001})  # one more, then 429
        # After an answer the quick replies are follow-ups: the question is typed and sent with Enter.
        await first.get_by_label("Your question").fill("Why was I charged interest?")
        await first.get_by_label("Your question").press("Enter")
        await expect(first.get_by_role("status")).to_have_text("Writing your answer…")
        await second.get_by_label("Your question").fill("Why was I charged interest?")
        await second.get_by_label("Your question").press("Enter")
        await expect(second.get_by_role("alert")).to_contain_text("You are asking faster than we can answer.")
    finally:
        await first.close()
        await second.close()


async def test_network_loss_is_a_clear_message(page: Page, serve: Any, bank: Any) -> None:
    server = serve()
    await open_demo(page, server, bank)
    await page.context.set_offline(True)
    await page.get_by_role("button", name="Did my payment arrive?").click()
    await expect(page.get_by_role("alert")).to_have_text(
        "The connection was lost. Check your internet connection and try again."
    )
    await screenshot(page, "widget-offline")


async def test_another_customers_account_is_not_found(
    page: Page, serve: Any, bank: Any, make_tenant: Any, load: Any
) -> None:
    other_bank = await make_tenant()
    await load(document(other_bank.slug, [customer(accounts=[account("Z-1")])]))  # also a C-1001
    server = serve()
    await open_demo(page, server, bank)
    # Even if the page is tampered with, the token reaches only its own customer's accounts: not
    # another customer's at the same bank (B-1), nor another bank's customer with the same ref (Z-1).
    for ref in ("B-1", "Z-1"):
        await pick_foreign_card(page, ref)
        async with page.expect_response("**/v1/chat") as response:
            await page.get_by_role("button", name="Did my payment arrive?").click()
        assert (await response.value).status == 404
        await expect(page.get_by_role("alert")).to_have_text("We could not find that card.")
    await screenshot(page, "widget-not-found")


async def test_the_widget_speaks_the_customers_language(
    page: Page, serve: Any, make_tenant: Any, load: Any, fake_sglang: RunningFake
) -> None:
    tenant = await make_tenant("interactive")
    await load(document(tenant.slug, [customer(locale="zh-CN", accounts=[account(currency="CNY")])]))
    fake_sglang.fake.default = Script(text="not json")  # fails validation: the verified answer replaces it
    server = serve()
    await page.goto(f"{server.url}/demo?bank={tenant.slug}&customer=C-1001")
    await expect(page.get_by_label("卡片")).to_have_value("A-1")
    await page.get_by_role("button", name="为什么这个月的账单比上个月高？").click()
    answer = page.get_by_role("region", name="回答")
    await expect(answer).to_have_attribute("data-source", "fallback")
    await expect(answer).to_contain_text("12.00")
    await expect(page.get_by_text("我们已用与您账单核对过的回答替换了草稿。")).to_be_visible()
    await screenshot(page, "widget-zh")


@pytest.mark.model
async def test_the_demo_page_streams_from_the_real_embedded_model(page: Page, served: Serve, bank: Any) -> None:
    """The demo's own path: the embedded llama.cpp engine writes the text; whatever it writes, the
    customer ends with a verified answer and the facts' numbers."""
    env = {
        "ENGINE": "embedded",
        "ENGINE_TIMEOUT_S": "30",
        "DEMO_PAGE": "1",
        "QUEUE_DEADLINE_SCALE": "10",
        "ANSWER_CACHE_FILL": "0",
    }
    server = served(Settings.from_env(env))
    await open_demo(page, server, bank)
    await page.get_by_role("button", name="Why is my bill higher than last month?").click()
    table = page.locator("table.facts")
    await expect(table.locator("[data-field=difference]")).to_have_text("+12.00 EUR")
    answer = page.get_by_role("region", name="Answer")
    await expect(answer).to_have_attribute("data-source", re.compile("model|fallback"), timeout=40_000)
    text = await answer.inner_text()
    if await answer.get_attribute("data-source") == "fallback":
        assert "12.00 EUR more" in text  # the deterministic answer replaced the model's
    assert text.strip()
    await screenshot(page, "widget-embedded-model")


async def test_an_answer_from_the_banks_help_content_shows_its_source(
    page: Page, serve: Any, bank: Any, engine: AsyncEngine
) -> None:
    text = "To dispute a charge, open it in the app and choose Dispute, or ask an agent in the chat."
    article = ArticleIn(
        id="dispute-how", locale="en", title="Disputing a charge", body=text, questions=["how do I dispute a charge"]
    )
    async with engine.begin() as conn:
        await import_library(conn, bank.id, [article])
    server = serve()
    await open_demo(page, server, bank)
    await page.get_by_label("Your question").fill("How do I dispute a charge?")
    await page.get_by_label("Your question").press("Enter")
    answer = page.get_by_role("region", name="Answer")
    await expect(answer).to_have_text(f"From our help article “Disputing a charge”: {text}")
    sources = page.locator(".msg.assistant .sources")
    await expect(sources).to_have_text("Source: Disputing a charge")
    await page.reload()  # the transcript keeps it
    await expect(page.locator(".msg.assistant .sources")).to_have_text("Source: Disputing a charge")
