"""The console tells the truth about each answer, in headless Chromium (issue 35): a cached reply's
audited page is the customer's own question, says it was served from the answer cache and links the
canonical answer it came from; two waiting conversations of one customer are two distinguishable rows;
each message carries the language it was written or answered in (`lang`), in a Chinese conversation too."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import date
from typing import Any

import httpx
import pytest
from playwright.async_api import Locator, Page, expect
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.console.words import language
from app.data import conversations, handovers
from app.settings import Settings
from bench.fakes.plans import GOOD
from bench.fakes.sglang_server import RunningFake, Script
from tests.browser.helpers import screenshot
from tests.browser.tongue import BOTH, Tongue, bank_data
from tests.chat_streams import TO_A_PERSON, last_events
from tests.console import sign_in_page
from tests.servers import Serve, ThreadedServer
from tests.waiting import until

pytestmark = pytest.mark.bank(agents=("ana",))
AS_OF = date(2026, 11, 10)  # October's bill: 12.00 EUR higher than September's (tests/factories.py)
BASE = {"COOKIE_SECURE": "0", "BATCH_WORKER": "0"}
ENGINE = "fake/model"  # the model an answer's page names, as it is


@pytest.fixture
def server(served: Serve) -> ThreadedServer:
    return served(Settings.from_env({**BASE, "ENGINE": "off"}))


@pytest.fixture
def cached_server(served: Serve, fake_sglang: RunningFake) -> ThreadedServer:
    """A model behind the service, so that canonical answers are cached (filled at once after a miss)."""
    fake_sglang.fake.default = Script(text=GOOD)
    env = {"ENGINE": "sglang", "SGLANG_URL": fake_sglang.url, "SGLANG_MODEL": ENGINE}
    settings = Settings.from_env({**BASE, **env, "CACHE_FILL_RATE_PER_S": "1000"})
    return served(settings)


class Customer:
    """A customer's chat, through the real API, on a page in `locale`, as the widget asks: each turn's
    events by name."""

    def __init__(self, http: httpx.AsyncClient, token: str, locale: str) -> None:
        self.http, self.auth, self.locale = http, {"Authorization": f"Bearer {token}"}, locale

    async def say(self, question: str, conversation_id: str | None = None) -> dict[str, Any]:
        body = {"account_ref": "A-1", "question": question, "as_of": AS_OF.isoformat()}
        body |= {"locale": self.locale, "page_locale": self.locale}  # as the widget sends them
        if conversation_id:
            body["conversation_id"] = conversation_id
        asked = await self.http.post("/v1/chat", json=body, headers=self.auth)
        assert asked.status_code == 200, asked.text
        return last_events(asked.text)


@pytest.fixture
async def chat(bank: Any, tongue: Tongue, request: pytest.FixtureRequest) -> AsyncIterator[Customer]:
    running: ThreadedServer = request.getfixturevalue(request.param)
    async with httpx.AsyncClient(base_url=running.url, timeout=30) as http:
        session = await http.post(
            "/v1/sessions", json={"customer_ref": "C-1001"}, headers={"Authorization": f"Bearer {bank.key}"}
        )
        yield Customer(http, session.json()["token"], tongue.locale)


@pytest.mark.parametrize("chat", ["cached_server"], indirect=True)
async def test_a_cached_reply_opens_the_customers_own_question_and_links_the_canonical_answer(
    page: Page, cached_server: ThreadedServer, bank: Any, chat: Customer, engine: AsyncEngine, tongue: Tongue
) -> None:
    t, write = tongue.t, tongue.write
    await chat.say(write("Why is my bill higher than last month?"))  # a miss: the canonical answer is filled
    await until("the canonical answer to be cached", lambda: _cached(engine, bank.id), timeout_s=20)
    asked = write("Why did my bill go up?")
    served = await chat.say(asked)
    assert served["final"]["source"] == "cache"
    assert served["final"]["locale"] == tongue.locale
    cid = served["conversation"]["conversation_id"]
    assert (await chat.say(write(TO_A_PERSON), cid))["turn"]["status"] == "waiting"

    await sign_in_page(page, cached_server.url, bank.slug)
    await page.goto(f"{cached_server.url}/console/conversations/{cid}")
    reply = page.locator("#transcript li.assistant").first
    await expect(reply).to_contain_text(served["final"]["explanation"][:40])
    await reply.get_by_role("link", name=t("audited answer")).click()
    await expect(page.get_by_role("heading", name=t("Answer"))).to_be_visible()
    await expect(page.locator("dd.question")).to_have_text(asked)  # the customer's own words
    await expect(page.locator("#source")).to_have_text(t("cache"))
    cached = t(
        "The question above, in the customer’s own words, was served from the answer cache: the answer"
        " was made once for the statement’s canonical question and reused ({link}).",
        link=t("the canonical answer it came from"),
    )
    await expect(page.locator("#served-from")).to_have_text(cached)
    await tongue.says_no_english(page, *bank_data(bank.slug), ENGINE)
    await screenshot(page, "console-cached-answer")
    await page.locator("#canonical").click()
    await expect(page).to_have_url(f"{cached_server.url}/console/answers/{served['final']['answer_id']}")
    await expect(page.locator("dd.question")).to_have_text(write("Why is my bill different from last month?"))
    await expect(page.locator("#source")).to_have_text(t("model"))
    await expect(page.locator("#served-from")).to_have_count(0)


async def _cached(engine: AsyncEngine, tenant_id: int) -> bool:
    async with engine.connect() as conn:
        query = text("SELECT count(*) FROM answer_cache WHERE tenant_id = :t")
        return bool(await conn.scalar(query, {"t": tenant_id}))


async def test_two_waiting_conversations_of_one_customer_are_told_apart(
    page: Page, server: ThreadedServer, bank: Any, engine: AsyncEngine, tongue: Tongue
) -> None:
    t, write, locale = tongue.t, tongue.write, tongue.locale
    earlier, later = uuid.uuid4(), uuid.uuid4()
    higher, due, person = write("Why is my bill higher?"), write("When is my payment due?"), write("I want a person")
    async with engine.begin() as conn:
        for cid, question in ((earlier, higher), (later, due)):
            await conversations.start(conn, bank.id, cid, "C-1001", locale)
            await conversations.append(conn, bank.id, cid, "customer", question, locale=locale, account_ref="A-1")
            await conversations.append(conn, bank.id, cid, "customer", person, locale=locale)
            assert await handovers.hand_over(conn, bank.id, cid, "requested")
        # The first began ten minutes before it was handed over.
        await conn.execute(
            text("UPDATE conversations SET created_at = now() - interval '10 minutes' WHERE id = :id"), {"id": earlier}
        )
    await sign_in_page(page, server.url, bank.slug)
    await page.get_by_role("link", name=t("Waiting conversations")).click()
    rows = page.locator("#queue tr")
    await expect(rows).to_have_count(2)
    first, second = page.locator(f'#queue tr[data-id="{earlier}"]'), page.locator(f'#queue tr[data-id="{later}"]')
    await expect(first.locator(".first")).to_have_text(higher)
    await expect(second.locator(".first")).to_have_text(due)
    await expect(first.locator(".last")).to_have_text(person)
    await expect(first.locator(".language")).to_have_text(tongue.language)
    await expect(first.locator(".first")).to_have_attribute("lang", locale)
    await expect(first.locator(".started")).to_contain_text(
        tongue.before("#{short}, started {time}", "time", short=earlier.hex[:8])
    )
    started = [await row.locator(".started").inner_text() for row in (first, second)]
    assert started[0] != started[1]
    named = [await _names(row) for row in (first, second)]
    assert named[0] != named[1]
    # The two Take buttons are told apart by their names too (a screen reader reads those).
    take = [await row.get_by_role("button").text_content() or "" for row in (first, second)]
    assert take[0] != take[1]
    assert earlier.hex[:8] in take[0]
    # The refreshed rows (the script's, every two seconds) say the same: a refresh ends by clearing the
    # list's status line, so a mark written there now is gone once the next refresh has drawn the rows.
    status = page.locator("#queue-status")
    await status.evaluate("line => { line.textContent = 'not refreshed yet' }")
    await expect(status).to_have_text("", timeout=5000)
    assert [
        [await row.locator(c).inner_text() for c in (".started", ".first", "button")] for row in (first, second)
    ] == named
    await tongue.says_no_english(page, *bank_data(bank.slug))
    await screenshot(page, "console-queue-two-conversations")

    await first.locator("a.customer").click()
    await expect(page.locator("#started")).to_be_visible()
    await expect(page.locator("#handed-over")).to_contain_text(tongue.before("(waiting for {wait})", "wait"))
    await tongue.says_no_english(page, *bank_data(bank.slug))
    assert await page.locator("#started").inner_text() != await page.locator("#handed-over time").inner_text()


async def _names(row: Locator) -> list[str]:
    """What names a queue row's conversation: its start, its first question, its Take button."""
    return [await row.locator(cell).inner_text() for cell in (".started", ".first", "button")]


@pytest.mark.parametrize("chat", ["server"], indirect=True)
@pytest.mark.parametrize("tongue", BOTH, indirect=True)
async def test_a_chinese_conversation_marks_every_message_with_its_own_language(
    page: Page, server: ThreadedServer, bank: Any, chat: Customer, tongue: Tongue
) -> None:
    t, locale = tongue.t, tongue.locale
    # The customer's locale is English, the page's too; they write Chinese.
    answered = await chat.say("为什么我的账单变高了？")
    assert answered["final"]["locale"] == "zh-CN"
    cid = answered["conversation"]["conversation_id"]
    assert (await chat.say(tongue.write(TO_A_PERSON), cid))["turn"]["status"] == "waiting"

    await sign_in_page(page, server.url, bank.slug)
    await page.get_by_role("link", name=t("Waiting conversations")).click()
    row = page.locator(f'#queue tr[data-id="{cid}"]')
    await expect(row.locator(".first")).to_have_attribute("lang", "zh-CN")
    await expect(row.locator(".language")).to_contain_text(t("Simplified Chinese"))
    await row.get_by_role("button", name=t("Take")).click()

    texts = page.locator("#transcript li .text")
    await expect(texts).to_have_count(5)  # question, answer, "agent please", its notice, the agent joined
    # The handover's notice is answered in the language of "agent please" (as the page says it); the
    # console's own notice (the agent joined) in the conversation's.
    marked = ["zh-CN", "zh-CN", locale, locale, "zh-CN"]
    assert [await m.get_attribute("lang") for m in await texts.all()] == marked
    await expect(page.locator("#transcript li").first.locator(".in")).to_contain_text(t("Simplified Chinese"))
    await expect(page.locator("#transcript li").nth(2).locator(".in")).to_have_text(
        t("· in {language}", language=language(locale))
    )
    await expect(page.locator("#language")).to_contain_text(t("Simplified Chinese"))
    await expect(page.locator("html")).to_have_attribute("lang", locale)  # the console itself stays in its own
    for message in await page.locator("#transcript li").all():  # who, when and in what: one line
        who, when = await message.locator(".who").bounding_box(), await message.locator("time").bounding_box()
        assert who is not None
        assert when is not None
        assert abs(who["y"] - when["y"]) < 4, (who, when)

    await chat.say("谢谢", cid)  # arrives live: the script marks it too
    await expect(texts).to_have_count(6, timeout=5000)
    await expect(texts.nth(5)).to_have_attribute("lang", "zh-CN")
    await expect(page.locator("#transcript li").nth(5).locator(".in")).to_contain_text(t("Simplified Chinese"))
    await tongue.says_no_english(page, *bank_data(bank.slug))
    await screenshot(page, "console-chinese-conversation")
