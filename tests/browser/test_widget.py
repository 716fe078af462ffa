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
from app.prompts import change, phrases
from app.settings import Settings
from bench.fakes.plans import CHANGE_UP, DRIVER_1_UP, GOOD_SHOWN, plan
from bench.fakes.sglang_server import FakeSGLang, RunningFake, Script
from tests.browser.helpers import pick_foreign_card, screenshot
from tests.browser.tongue import BOTH, Tongue, bank_data
from tests.factories import account, customer, document
from tests.pseudo_locale import SOURCE
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
# The answer's figures and merchant, as they are in any language.
FIGURES = ("12.00 EUR", "124.99 EUR", "112.99 EUR", "City Gym")


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


async def open_demo(
    page: Page, server: ThreadedServer, bank: Any, tongue: Tongue, customer_ref: str = "C-1001"
) -> None:
    await page.goto(tongue.demo(server.url, bank.slug, customer_ref))
    await expect(page.get_by_label(tongue.t("Card"))).to_have_value("A-1" if customer_ref == "C-1001" else "B-1")


@pytest.mark.parametrize("tongue", BOTH, indirect=True)
async def test_the_answer_streams_in_and_its_amounts_are_the_facts(
    page: Page, serve: Any, bank: Any, fake_sglang: RunningFake, engine: AsyncEngine, tongue: Tongue
) -> None:
    t, locale = tongue.t, tongue.locale
    fake_sglang.fake.default = Script(text=ANSWER, token_delay_s=0.05)
    server = serve()
    await open_demo(page, server, bank, tongue)
    await page.get_by_role("button", name=t("Why is my bill higher than last month?")).click()

    answer = page.get_by_role("region", name=t("Answer"))
    await expect(page.get_by_role("status")).to_have_text(t("Writing your answer…"))
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
    await expect(answer).to_have_text(tongue.said(SHOWN, *FIGURES))
    await expect(page.get_by_role("status")).to_have_text(t("Answer ready."))
    await expect(page.get_by_role("log")).to_have_attribute("aria-busy", "false")
    await expect(page.locator(".msg.assistant .typing")).to_be_hidden()

    # The table shows exactly the facts computed from the database.
    facts = compute_facts(await today_history(engine, bank), date.today())
    labels, status = phrases(facts.drivers, facts.payment.status, locale)
    table = page.locator("table.facts")
    assert await table.locator("[data-field=current]").inner_text() == f"{facts.statement.new_balance} EUR"
    assert await table.locator("[data-field=previous]").inner_text() == f"{facts.previous_balance} EUR"
    assert await table.locator("[data-field=difference]").inner_text() == f"+{facts.difference} EUR"
    assert await table.locator("[data-field=minimum_due]").inner_text() == f"{facts.statement.minimum_due} EUR"
    assert await table.locator("[data-field=status]").inner_text() == status
    assert await table.locator("[data-field=drivers] li").all_inner_texts() == [
        f"{label}: {change(d.amount, 'EUR', locale)}" for label, d in zip(labels, facts.drivers, strict=True)
    ]  # "purchases at “City Gym”: 12.00 EUR more than last month"
    assert facts.statement.new_balance == Decimal("124.99")
    assert facts.difference == Decimal("12.00")
    await tongue.says_no_english(page, *bank_data(bank.slug))
    await screenshot(page, "widget-answer")


async def test_a_narrow_phone_screen_works_with_the_keyboard(
    browser: Browser, serve: Any, bank: Any, fake_sglang: RunningFake, tongue: Tongue
) -> None:
    t = tongue.t
    fake_sglang.fake.default = Script(text=ANSWER)
    server = serve()
    context = await browser.new_context(viewport={"width": 360, "height": 740}, is_mobile=True, has_touch=True)
    page = await context.new_page()
    try:
        await open_demo(page, server, bank, tongue)
        # Shift+Enter starts a new line; Enter sends.
        question = page.get_by_label(t("Your question"))
        first, second = tongue.write("Why is my bill"), tongue.write("higher?")
        await question.fill(first)
        await question.press("Shift+Enter")
        await question.press_sequentially(second)
        await expect(question).to_have_value(f"{first}\n{second}")
        await expect(page.locator(".msg.customer")).to_have_count(0)  # nothing sent yet
        await question.press("Enter")
        await expect(question).to_have_value("")
        await expect(page.get_by_role("log").get_by_text(f"{first}\n{second}")).to_be_visible()
        await expect(page.get_by_role("region", name=t("Answer"))).to_have_text(tongue.said(SHOWN, *FIGURES))
        # The quick replies are the follow-ups now, in reach of the keyboard.
        await expect(page.get_by_role("button", name=t("And why?"))).to_be_visible()
        await tongue.says_no_english(page, *bank_data(bank.slug))
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
    page: Page, serve: Any, bank: Any, fake_sglang: RunningFake, engine: AsyncEngine, tongue: Tongue
) -> None:
    t, said = tongue.t, tongue.said
    # The first answer goes on for long once its required claims are said (a claim that never closes).
    endless = ', {"claim": "period"' + ', "note": 1' * 300
    fake_sglang.fake.scripts.append(Script(text=endless, token_delay_s=0.05))
    fake_sglang.fake.answer_for = payment_plans(fake_sglang.fake)
    server = serve()
    await open_demo(page, server, bank, tongue)
    await page.get_by_role("button", name=t("Why is my bill higher than last month?")).click()
    answer = page.get_by_role("region", name=t("Answer"))
    await expect(answer).not_to_have_text("")  # the first answer is being written, slowly
    await page.get_by_role("button", name=t("Did my payment arrive?")).click()
    facts = compute_facts(await today_history(engine, bank), date.today())
    _, status = phrases(facts.drivers, facts.payment.status, tongue.locale)
    # The status first, what an answer of that status holds (it depends on today's date), the model's own last.
    opening = said("The payment status of this statement: ") + status + said(". ")
    period = said(" This statement covers 1 October 2026 to 31 October 2026.")
    await expect(answer).to_have_text(re.compile(f"^{re.escape(opening)}.*{re.escape(period)}$"))
    first = fake_sglang.fake.requests[0]["rid"]
    # The browser closed the first stream: the engine was told to stop.
    await until("the first stream's abort", lambda: first in fake_sglang.fake.aborted)


async def test_a_claim_that_fails_its_check_never_reaches_the_page(
    page: Page, serve: Any, bank: Any, fake_sglang: RunningFake, tongue: Tongue
) -> None:
    """The plan's third claim contradicts the facts (it says the bill is paid; it is unpaid): a log of
    every change to the answer's text proves the page never showed it; the engine request was aborted
    and the verified answer replaced the claims already said."""
    paid = {"claim": "payment_status", "status": "paid"}
    text = plan(CHANGE_UP, DRIVER_1_UP, paid, {"claim": "period"}, {"claim": "next_step", "action": "agent"})
    fake_sglang.fake.default = Script(text=text, token_delay_s=0.03)
    server = serve()
    await open_demo(page, server, bank, tongue)
    await page.evaluate(
        """() => {
            window.shown = [];
            const root = document.querySelector("[data-bill-assistant]").shadowRoot;
            const record = () => window.shown.push(root.querySelector(".answer")?.textContent ?? "");
            new MutationObserver(record).observe(root, {subtree: true, childList: true, characterData: true});
        }"""
    )
    await page.get_by_role("button", name=tongue.t("Why is my bill higher than last month?")).click()
    answer = page.get_by_role("region", name=tongue.t("Answer"))
    await expect(answer).to_have_attribute("data-source", "fallback")
    shown: list[str] = await page.evaluate("window.shown")
    good = tongue.said(GOOD_SHOWN, *FIGURES)
    assert any(good in text for text in shown)  # the change and its cause, said before the contradiction
    assert [text for text in shown if tongue.said("payment status") in text] == []
    assert [text for text in shown if tongue.said("paid in full") in text] == []
    assert "{" not in "".join(shown)  # no unfilled slot either
    more = tongue.said("12.00 EUR more than the 112.99 EUR on your previous statement", *FIGURES)
    await expect(answer).to_contain_text(more)
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

    async def embed(self, assistant: str, api_key: str, lang: str, customer_ref: str = "C-1001") -> None:
        # What the bank's backend does: ask for the customer's token with its API key.
        async with httpx.AsyncClient(base_url=assistant) as client:
            r = await client.post(
                "/v1/sessions", json={"customer_ref": customer_ref}, headers={"Authorization": f"Bearer {api_key}"}
            )
        token = r.json()["token"]
        self.html = f"""<!doctype html><html lang="{lang}"><head><meta charset="utf-8"><title>Bank</title></head>
            <body><h1>Your card</h1><div data-bill-assistant data-token="{token}" data-endpoint="{assistant}"></div>
            <script src="{assistant}/static/widget.js" defer></script></body></html>""".encode()


@pytest.mark.parametrize("allowed", [True, False])
async def test_the_widget_embeds_on_the_banks_own_site(
    page: Page, serve: Any, bank: Any, fake_sglang: RunningFake, allowed: bool, tongue: Tongue
) -> None:
    t = tongue.t
    fake_sglang.fake.default = Script(text=ANSWER)
    site = BankSite()
    try:
        # The assistant lets the bank's origin call it from the browser (CORS), or does not.
        server = serve(WIDGET_ORIGINS=site.server.url if allowed else "https://elsewhere.example")
        await site.embed(server.url, bank.key, tongue.locale)
        await page.goto(site.server.url)
        if not allowed:  # the browser refuses the cross-origin call: nothing leaks, the widget says so
            await expect(page.get_by_role("alert")).to_have_text(
                t("The connection was lost. Check your internet connection and try again.")
            )
            return
        await expect(page.get_by_label(t("Card"))).to_have_value("A-1")
        await page.get_by_role("button", name=t("Why is my bill higher than last month?")).click()
        await expect(page.get_by_role("region", name=t("Answer"))).to_have_text(tongue.said(SHOWN, *FIGURES))
        # The bank's own page is the bank's: only the widget is the assistant's.
        await tongue.says_no_english(page, *bank_data(bank.slug), "Bank", "Your card")
        await screenshot(page, "widget-on-bank-site")
    finally:
        site.server.stop()


async def test_an_expired_session_says_so(page: Page, serve: Any, bank: Any, tongue: Tongue) -> None:
    server = serve(SESSION_TTL_S="1.5")
    await open_demo(page, server, bank, tongue)
    await asyncio.sleep(1.6)
    await page.get_by_role("button", name=tongue.t("Did my payment arrive?")).click()
    expired = tongue.t("Your session has expired. Please reload the page to continue.")
    await expect(page.get_by_role("alert")).to_have_text(expired)
    await tongue.says_no_english(page, *bank_data(bank.slug))
    await screenshot(page, "widget-expired")


async def test_rate_limits_and_overload_are_clear_messages(
    browser: Browser, serve: Any, bank: Any, fake_sglang: RunningFake, engine: AsyncEngine, tongue: Tongue
) -> None:
    t = tongue.t
    fake_sglang.fake.default = Script(text=ANSWER, hang_s=2.0)
    fake_sglang.fake.answer_for = payment_plans(fake_sglang.fake)
    # One engine slot, a short queue: while one question is answered, the next is refused (503).
    server = serve(ENGINE_CAPACITY="1", QUEUE_DEADLINE_SCALE="0.01")
    first, second = await browser.new_page(), await browser.new_page()
    try:
        await open_demo(first, server, bank, tongue)
        await open_demo(second, server, bank, tongue, "C-2002")
        await first.get_by_role("button", name=t("Did my payment arrive?")).click()
        await expect(first.get_by_role("status")).to_have_text(t("Writing your answer…"))
        await second.get_by_role("button", name=t("Did my payment arrive?")).click()
        busy = tongue.pattern("We are very busy right now. Please try again in {s} seconds.", s=r"\d+")
        await expect(second.get_by_role("alert")).to_have_text(busy)
        await tongue.says_no_english(second, *bank_data(bank.slug), "B-1", "C-2002")
        await screenshot(second, "widget-busy")
        await expect(first.get_by_role("region", name=t("Answer"))).to_have_attribute(
            "data-source", "model", timeout=10_000
        )

        async with engine.begin() as conn:
            await set_limits(conn, bank.slug, {"rate_limit_per_s": 0.001})  # one more, then 429
        # After an answer the quick replies are follow-ups: the question is typed and sent with Enter.
        interest = t("Why was I charged interest?")
        await first.get_by_label(t("Your question")).fill(interest)
        await first.get_by_label(t("Your question")).press("Enter")
        await expect(first.get_by_role("status")).to_have_text(t("Writing your answer…"))
        await second.get_by_label(t("Your question")).fill(interest)
        await second.get_by_label(t("Your question")).press("Enter")
        faster = "You are asking faster than we can answer. Please try again in {s} seconds."
        await expect(second.get_by_role("alert")).to_have_text(tongue.pattern(faster, s=r"\d+"))
        await tongue.says_no_english(second, *bank_data(bank.slug), "B-1", "C-2002")
    finally:
        await first.close()
        await second.close()


async def test_network_loss_is_a_clear_message(page: Page, serve: Any, bank: Any, tongue: Tongue) -> None:
    server = serve()
    await open_demo(page, server, bank, tongue)
    await page.context.set_offline(True)
    await page.get_by_role("button", name=tongue.t("Did my payment arrive?")).click()
    lost = tongue.t("The connection was lost. Check your internet connection and try again.")
    await expect(page.get_by_role("alert")).to_have_text(lost)
    await tongue.says_no_english(page, *bank_data(bank.slug))
    await screenshot(page, "widget-offline")


async def test_another_customers_account_is_not_found(
    page: Page, serve: Any, bank: Any, make_tenant: Any, load: Any, tongue: Tongue
) -> None:
    other_bank = await make_tenant()
    await load(document(other_bank.slug, [customer(accounts=[account("Z-1")])]))  # also a C-1001
    server = serve()
    await open_demo(page, server, bank, tongue)
    # Even if the page is tampered with, the token reaches only its own customer's accounts: not
    # another customer's at the same bank (B-1), nor another bank's customer with the same ref (Z-1).
    for ref in ("B-1", "Z-1"):
        await pick_foreign_card(page, ref)
        async with page.expect_response("**/v1/chat") as response:
            await page.get_by_role("button", name=tongue.t("Did my payment arrive?")).click()
        assert (await response.value).status == 404
        await expect(page.get_by_role("alert")).to_have_text(tongue.t("We could not find that card."))
        await tongue.says_no_english(page, *bank_data(bank.slug), ref)
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
    await open_demo(page, server, bank, Tongue(SOURCE))  # the model writes English: the demo's default
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
    page: Page, serve: Any, bank: Any, engine: AsyncEngine, tongue: Tongue
) -> None:
    """The bank's article, in the customer's language, quoted as the bank wrote it."""
    t, write = tongue.t, tongue.write
    title = write("Disputing a charge")
    text = write("To dispute a charge, open it in the app and choose Dispute, or ask an agent in the chat.")
    article = ArticleIn(
        id="dispute-how", locale=tongue.locale, title=title, body=text, questions=[write("how do I dispute a charge")]
    )
    async with engine.begin() as conn:
        await import_library(conn, bank.id, [article])
    server = serve()
    await open_demo(page, server, bank, tongue)
    await page.get_by_label(t("Your question")).fill(write("How do I dispute a charge?"))
    await page.get_by_label(t("Your question")).press("Enter")
    answer = page.get_by_role("region", name=t("Answer"))
    await expect(answer).to_have_text(tongue.said("From our help article “") + title + "”: " + text)
    sources = page.locator(".msg.assistant .sources")
    await expect(sources).to_have_text(f"{t('Source')}: {title}")
    await tongue.says_no_english(page, *bank_data(bank.slug))
    await page.reload()  # the transcript keeps it
    await expect(page.locator(".msg.assistant .sources")).to_have_text(f"{t('Source')}: {title}")
