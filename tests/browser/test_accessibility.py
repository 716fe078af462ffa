"""WCAG 2.1 AA, measured: axe-core (the npm package pinned in tests/browser/axe/, installed by
./scripts/dev test) runs in Debian's Chromium on the demo page with the widget (en and zh-CN, at
rest, while an answer is written, after it, with choices, with an agent) and on every console page,
and finds no serious or critical violation, in English and in en-XA (a third longer). At 375x667 the
widget and its statement table fit.

Pages are opened with CSP bypassed only so that axe's script can be injected; the CSP itself is
held by the other browser tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, BrowserContext, Page, ViewportSize, expect

from app.settings import Settings
from bench.fakes.plans import CHANGE_UP, DRIVER_1_UP, plan
from bench.fakes.sglang_server import RunningFake, Script
from tests.browser.helpers import screenshot
from tests.browser.tongue import Tongue
from tests.console import sign_in_page
from tests.factories import CAFE_LOVER, account, customer
from tests.servers import Serve, ThreadedServer

AXE = Path(__file__).parent / "axe" / "node_modules" / "axe-core" / "axe.min.js"
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
PHONE = ViewportSize(width=375, height=667)
CUSTOMERS = {"en": "C-1001", "zh-CN": "C-2002"}
pytestmark = pytest.mark.bank(
    customer(), customer("C-2002", "zh-CN", [account("B-1", "CNY")]), CAFE_LOVER, agents=("ana",)
)


def _settings(**extra: str) -> Settings:
    env = {"ENGINE": "off", "DEMO_PAGE": "1", "COOKIE_SECURE": "0", "BATCH_WORKER": "0", "ANSWER_CACHE_FILL": "0"}
    return Settings.from_env(env | {"API_KEY_CACHE_TTL": "0", **extra})


@pytest.fixture
def server(served: Serve) -> ThreadedServer:
    return served(_settings())


@pytest.fixture
async def audited(browser: Browser) -> AsyncIterator[Callable[[], Awaitable[Page]]]:
    """Pages axe can be injected into, each in a context of its own (a customer's session of its own)."""
    contexts: list[BrowserContext] = []

    async def new_page() -> Page:
        contexts.append(await browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True))
        return await contexts[-1].new_page()

    yield new_page
    for context in contexts:
        await context.close()


async def serious_violations(page: Page) -> list[str]:
    """axe's serious and critical WCAG 2.1 A/AA violations on the page as it is now, one line each."""
    if not await page.evaluate("typeof window.axe !== 'undefined'"):
        await page.add_script_tag(path=str(AXE))
    result = await page.evaluate(
        "tags => axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']})", WCAG_AA
    )
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


async def open_demo(page: Page, server: ThreadedServer, bank: Any, customer_ref: str, tongue: Tongue | None) -> None:
    """The demo page in `tongue`'s language; None: in the customer's."""
    url = (
        tongue.demo(server.url, bank.slug, customer_ref)
        if tongue
        else f"{server.url}/demo?bank={bank.slug}&customer={customer_ref}"
    )
    await page.goto(url)
    await expect(page.locator("[data-bill-assistant] textarea")).to_be_visible()


async def ask(page: Page, question: str) -> None:
    await page.locator("[data-bill-assistant] textarea").fill(question)
    await page.locator("[data-bill-assistant] textarea").press("Enter")


async def answered(page: Page) -> None:
    await expect(page.locator(".msg.assistant .answer[aria-busy=false]")).to_have_count(1)


async def hand_over(page: Page, server: ThreadedServer, bank: Any, customer_ref: str, tongue: Tongue) -> None:
    """The customer asks for a person and waits (ENGINE=off: the request is recognised by its words)."""
    chinese = customer_ref == CUSTOMERS["zh-CN"]
    await open_demo(page, server, bank, customer_ref, None if chinese else tongue)
    await ask(page, "我想和人工客服通话" if chinese else tongue.write("I want to speak to a person"))
    await expect(page.locator("[data-bill-assistant] .banner")).to_be_visible()


@pytest.mark.parametrize("language", ["en", "zh-CN"])
async def test_the_widget_has_no_serious_violations_at_rest_answered_with_choices_and_with_an_agent(
    browser: Browser, audited: Any, server: ThreadedServer, bank: Any, language: str, tongue: Tongue
) -> None:
    """The Chinese customer's widget speaks Chinese whatever the console speaks; the other, `tongue`'s."""
    t, write, chinese = tongue.t, tongue.write, language == "zh-CN"
    page, found = await audited(), {}
    await open_demo(page, server, bank, CUSTOMERS[language], None if chinese else tongue)
    found["at rest"] = await serious_violations(page)
    await ask(page, "为什么这个月的账单比上个月高？" if chinese else write("Why is my bill higher?"))
    await answered(page)
    found["answered"] = await serious_violations(page)

    page = await audited()
    await open_demo(page, server, bank, "C-3003", tongue)  # two cafes: the question is asked back with buttons
    await ask(page, f"{write('what is the')} cafe {write('one?')}")
    await expect(page.locator("[data-bill-assistant] .choices button")).to_have_count(2)
    found["with choices"] = await serious_violations(page)

    page = await audited()
    await hand_over(page, server, bank, CUSTOMERS[language], tongue)
    found["waiting for an agent"] = await serious_violations(page)
    agents = await browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        agent = await agents.new_page()
        await sign_in_page(agent, server.url, bank.slug)
        await agent.goto(f"{server.url}/console/queue")
        await agent.get_by_role("button", name=t("Take")).first.click()
        await agent.get_by_label(t("Your reply (the customer reads it at once)")).fill("Hello, I am looking now.")
        await agent.get_by_role("button", name=t("Send")).click()
        await expect(page.locator(".msg.agent")).to_have_count(1)
    finally:
        await agents.close()
    found["with an agent"] = await serious_violations(page)
    await screenshot(page, f"accessibility-widget-{language}-{tongue.locale}")
    assert found == {state: [] for state in found}


async def test_the_widget_has_no_serious_violations_while_an_answer_is_written(
    audited: Any, served: Serve, bank: Any, fake_sglang: RunningFake, tongue: Tongue
) -> None:
    fake_sglang.fake.default = Script(text=plan(CHANGE_UP, DRIVER_1_UP), token_delay_s=0.15)
    server = served(_settings(ENGINE="sglang", SGLANG_URL=fake_sglang.url))
    page = await audited()
    await open_demo(page, server, bank, "C-1001", tongue)
    await ask(page, tongue.write("Why is my bill higher?"))
    await expect(page.locator(".msg.assistant .answer[aria-busy=true]")).to_have_count(1)
    await expect(page.locator(".msg.assistant .answer")).not_to_have_text("")
    assert await serious_violations(page) == []


async def test_every_console_page_has_no_serious_violations(
    audited: Any, server: ThreadedServer, bank: Any, tongue: Tongue
) -> None:
    t, page, found = tongue.t, await audited(), {}
    await page.goto(f"{server.url}/console/login")
    found["sign-in"] = await serious_violations(page)
    await sign_in_page(page, server.url, bank.slug)
    found["find a customer"] = await serious_violations(page)
    await page.get_by_label(t("Customer reference or name")).fill("C-1001")
    await page.get_by_role("button", name=t("Search")).click()
    await page.get_by_role("link", name="A-1").click()
    await expect(page.get_by_role("heading", name=t("Ask about this account"))).to_be_visible()
    found["account"] = await serious_violations(page)
    await page.get_by_label(t("Question, as the customer put it")).fill(tongue.write("Why is my bill higher?"))
    await page.get_by_role("button", name=t("Ask")).click()
    await expect(page.locator("#live-details")).to_be_visible()
    found["account, answered"] = await serious_violations(page)
    await page.locator("#live-details").click()
    await expect(page.get_by_role("heading", name=t("Latency"))).to_be_visible()
    found["answer"] = await serious_violations(page)

    await hand_over(await audited(), server, bank, "C-1001", tongue)
    await page.goto(f"{server.url}/console/queue")
    await expect(page.get_by_role("button", name=t("Take"))).to_have_count(1)
    found["queue"] = await serious_violations(page)
    await page.get_by_role("button", name=t("Take")).click()
    await expect(page.get_by_label(t("Your reply (the customer reads it at once)"))).to_be_visible()
    found["conversation"] = await serious_violations(page)
    await page.goto(f"{server.url}/console/library")
    found["library"] = await serious_violations(page)
    articles = page.locator("main a[href*='/console/library/']")
    if await articles.count():
        await articles.first.click()
        found["article"] = await serious_violations(page)
    assert found == {name: [] for name in found}


async def test_on_a_phone_the_widget_and_its_statement_table_fit(
    browser: Browser, server: ThreadedServer, bank: Any, tongue: Tongue
) -> None:
    context = await browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    try:
        page = await context.new_page()
        await open_demo(page, server, bank, "C-1001", tongue)
        await ask(page, tongue.write("Why is my bill higher?"))
        await answered(page)
        table = page.locator("[data-bill-assistant] table.facts")
        await table.scroll_into_view_if_needed()
        await expect(table).to_be_visible()
        page_width = await page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert page_width[0] <= page_width[1], f"the page scrolls sideways: {page_width}"
        # Every cell of the table is inside the screen and inside the chat's own box: nothing cut off.
        widget = await page.locator("[data-bill-assistant]").bounding_box()
        assert widget is not None
        for cell in await table.locator("th, td").all():
            box = await cell.bounding_box()
            assert box is not None
            assert box["x"] >= widget["x"] - 0.5, await cell.inner_text()
            assert box["x"] + box["width"] <= min(widget["x"] + widget["width"], PHONE["width"]) + 0.5, (
                await cell.inner_text()
            )
        await screenshot(page, "accessibility-phone-table")
    finally:
        await context.close()


# The live regions (role log/status/alert or aria-live other than off) whose text holds `needle`,
# counting only the outermost: a screen reader reads a message once when exactly one holds it.
ANNOUNCING = """([needle]) => {
  const root = document.querySelector('[data-bill-assistant]').shadowRoot;
  const live = [...root.querySelectorAll('[role=log],[role=status],[role=alert],[aria-live]')]
    .filter(e => e.getAttribute('aria-live') !== 'off' && !e.hidden && e.textContent.includes(needle));
  return live.filter(e => !live.some(o => o !== e && o.contains(e))).map(e => e.className || e.tagName);
}"""


async def test_the_widget_works_by_keyboard_alone_and_announces_each_message_once(
    audited: Any, server: ThreadedServer, bank: Any, tongue: Tongue
) -> None:
    page = await audited()
    await open_demo(page, server, bank, "C-1001", tongue)
    for _ in range(30):  # Tab from the top of the page to the question box
        if await page.evaluate("document.activeElement?.shadowRoot?.activeElement?.tagName") == "TEXTAREA":
            break
        await page.keyboard.press("Tab")
    else:
        pytest.fail("the question box is not reachable with Tab")
    await page.keyboard.type(tongue.write("Why is my bill higher?"))
    await page.keyboard.press("Enter")
    await answered(page)
    answer = await page.locator(".msg.assistant .answer").inner_text()
    assert await page.evaluate(ANNOUNCING, [answer[:40]]) == ["log"]
    # A follow-up button is reached with Tab and pressed with Enter: a second answer, announced once.
    for _ in range(30):
        focused = await page.evaluate("document.activeElement?.shadowRoot?.activeElement?.textContent ?? ''")
        if focused == tongue.t("And why?"):
            break
        await page.keyboard.press("Tab")
    else:
        pytest.fail("the follow-up buttons are not reachable with Tab")
    await page.keyboard.press("Enter")
    await expect(page.locator(".msg.assistant .answer[aria-busy=false]")).to_have_count(2)
    second = await page.locator(".msg.assistant .answer").last.inner_text()
    assert await page.evaluate(ANNOUNCING, [second[:40]]) == ["log"]
