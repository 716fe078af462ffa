"""The console's side of a widget conversation's handover, over real HTTP against a real Postgres:
the bank's queue, two agents taking one conversation at once (exactly one wins), the transcript
page, replying, handing back, the live feed, and another bank's conversation as unknown as a missing
one. Conversations are made with app/data/conversations.py, as the chat route makes them."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.app import create_app
from app.data import conversations, handovers
from app.domain.vocabulary import HandoverReason, Locale
from app.prompts import render_notice
from tests.console import console_settings, signed_in
from tests.factories import account, customer
from tests.servers import ThreadedServer

FACTS = {
    "account_ref": "A-1",
    "locale": "en",
    "display": {
        "current": "124.99 EUR",
        "previous": "112.99 EUR",
        "difference": "+12.00 EUR",
        "minimum_due": "25.00 EUR",
        "due_date": "25 November 2026",
        "status": "unpaid",
        "drivers": [{"label": "Purchases", "amount": "+12.00 EUR"}],
    },
}


@pytest.fixture(scope="module")
def server(database_url: str) -> Iterator[ThreadedServer]:
    # Parallel requests on a busy test machine must not be shed (the guard has its own tests).
    running = ThreadedServer(create_app(console_settings(MAX_IN_FLIGHT="1000", MAX_LOOP_LAG_MS="0"), database_url))
    yield running
    running.stop()


BO = customer("C-2002", accounts=[account("B-1")]) | {"name": "Bo Chen"}
pytestmark = pytest.mark.bank(customer(), BO, agents=("ana", "bo"), priority_class="standard")


@pytest.fixture
async def other_bank(make_bank: Any) -> Any:
    return await make_bank(customer() | {"name": "Zed Other"}, BO, agents=("ana",), priority_class="standard")


class Agent:
    """A signed-in agent's browser: its own cookies and the session's CSRF token."""

    def __init__(self, http: httpx.AsyncClient, csrf: str) -> None:
        self.http, self.csrf = http, csrf

    async def post(self, path: str, **data: str) -> httpx.Response:
        return await self.http.post(path, data={"csrf_token": self.csrf, **data})


@pytest.fixture
async def browsers(server: ThreadedServer) -> AsyncIterator[Any]:
    clients: list[httpx.AsyncClient] = []

    async def sign_in(bank: Any, username: str = "ana") -> Agent:
        http = httpx.AsyncClient(base_url=server.url, timeout=30)
        clients.append(http)
        return Agent(http, await signed_in(http, bank.slug, username))

    yield sign_in
    for http in clients:
        await http.aclose()


async def waiting(
    engine: AsyncEngine,
    bank: Any,
    customer_ref: str = "C-1001",
    said: str = "I want to talk to a person",
    reason: HandoverReason = "requested",
    locale: Locale = "en",
) -> uuid.UUID:
    """A conversation handed over, as the chat route leaves it."""
    cid = uuid.uuid4()
    async with engine.begin() as conn:
        await conversations.start(conn, bank.id, cid, customer_ref, locale)
        await conversations.append(conn, bank.id, cid, "customer", said, account_ref="A-1")
        assert await handovers.hand_over(conn, bank.id, cid, reason)
    return cid


async def state(engine: AsyncEngine, cid: uuid.UUID) -> tuple[Any, list[conversations.Message]]:
    async with engine.begin() as conn:
        row = (await conn.execute(text("SELECT * FROM conversations WHERE id = :id"), {"id": cid})).mappings().one()
        return row, await conversations.messages(conn, row.tenant_id, cid)


async def agent_id(engine: AsyncEngine, bank: Any, username: str) -> int:
    async with engine.begin() as conn:
        query = text("SELECT id FROM agents WHERE tenant_id = :t AND username = :u")
        found: int = (await conn.execute(query, {"t": bank.id, "u": username})).scalar_one()
        return found


def waits_observed(bank: Any) -> float:
    value = REGISTRY.get_sample_value("bill_assistant_handover_wait_seconds_count", {"tenant": bank.slug})
    return value or 0.0


async def test_of_two_agents_taking_at_once_exactly_one_wins(browsers: Any, bank: Any, engine: AsyncEngine) -> None:
    ana, bo = await browsers(bank, "ana"), await browsers(bank, "bo")
    ids = {"ana": await agent_id(engine, bank, "ana"), "bo": await agent_id(engine, bank, "bo")}
    before, rounds = waits_observed(bank), 20
    for _ in range(rounds):
        cid = await waiting(engine, bank)
        path = f"/console/conversations/{cid}/take"
        first, second = await asyncio.gather(ana.post(path), bo.post(path))
        statuses = sorted((first.status_code, second.status_code))
        assert statuses == [303, 409], (first.text, second.text)
        winner, loser = ("ana", second) if first.status_code == 303 else ("bo", first)
        assert "This conversation was taken by another agent" in loser.text
        row, said = await state(engine, cid)
        assert (row["status"], row["agent_id"]) == ("agent", ids[winner])
        joined = [m for m in said if m.role == "system"]
        assert len(joined) == 1
        assert joined[0].text == render_notice("joined", "en", name=f"{winner.capitalize()} Agent")
    assert waits_observed(bank) == before + rounds  # one wait observed per take, none per lost take


async def test_the_queue_lists_the_banks_waiting_conversations_longest_first(
    browsers: Any, bank: Any, other_bank: Any, engine: AsyncEngine
) -> None:
    newest = await waiting(engine, bank, "C-1001", "Still there?", "fallbacks")
    oldest = await waiting(engine, bank, "C-2002", "A person, please", "requested")
    theirs = await waiting(engine, other_bank, "C-1001", "Zed's question")
    answered = await waiting(engine, bank)
    async with engine.begin() as conn:
        await conn.execute(text("UPDATE conversations SET waiting_since = now() - interval '200 s' WHERE id = :id"),
                           {"id": oldest})  # fmt: skip
        await handovers.take(conn, bank.id, answered, await agent_id(engine, bank, "bo"))
    ana = await browsers(bank)
    listed = await ana.http.get("/console/queue.json")
    assert listed.status_code == 200
    assert listed.headers["cache-control"] == "no-store"
    rows = listed.json()["waiting"]
    assert [r["id"] for r in rows] == [str(oldest), str(newest)]
    assert rows[0]["customer_ref"] == "C-2002"
    assert rows[0]["last_text"] == "A person, please"
    assert rows[0]["reason"] == "The customer asked for a person"
    assert rows[0]["waiting_s"] >= 200
    assert rows[0]["waited"].startswith("3 min ")
    assert rows[1]["reason"] == "The assistant could not answer, repeatedly"
    page = await ana.http.get("/console/queue")
    assert page.status_code == 200
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert '<a href="/console/queue">' in page.text  # in the navigation
    assert page.text.index(str(oldest)) < page.text.index(str(newest))
    assert f'action="/console/conversations/{oldest}/take"' in page.text
    assert str(theirs) not in page.text
    assert str(answered) not in page.text
    assert '<script src="/static/console.js" defer></script>' in page.text


async def test_another_banks_conversation_is_not_found_anywhere(
    browsers: Any, bank: Any, other_bank: Any, engine: AsyncEngine
) -> None:
    theirs, missing = await waiting(engine, other_bank), uuid.uuid4()
    zed = await browsers(other_bank)
    assert (await zed.post(f"/console/conversations/{theirs}/take")).status_code == 303
    ana = await browsers(bank)
    assert str(theirs) not in (await ana.http.get("/console/queue.json")).text
    for cid in (theirs, missing):
        base = f"/console/conversations/{cid}"
        responses = [
            await ana.http.get(base),
            await ana.http.get(f"{base}/events"),
            await ana.post(f"{base}/take"),
            await ana.post(f"{base}/messages", text="Hello from another bank"),
            await ana.post(f"{base}/release"),
        ]
        assert [r.status_code for r in responses] == [404] * 5, cid
        for response in responses:
            assert response.text.replace(str(cid), "ID") == responses[0].text.replace(str(cid), "ID")
    assert (await ana.http.get("/console/conversations/not-an-id")).status_code == 404
    row, said = await state(engine, theirs)
    assert (row["status"], row["agent_id"]) == ("agent", await agent_id(engine, other_bank, "ana"))
    assert [m.role for m in said] == ["customer", "system"]


async def test_only_the_agent_who_has_it_replies_and_hands_it_back(
    browsers: Any, bank: Any, engine: AsyncEngine
) -> None:
    cid = await waiting(engine, bank, locale="zh-CN")
    ana, bo = await browsers(bank, "ana"), await browsers(bank, "bo")
    base = f"/console/conversations/{cid}"
    refused = await ana.post(f"{base}/messages", text="Not mine yet")  # waiting: nobody has it
    assert refused.status_code == 403
    assert "Only the agent who has this conversation" in refused.text
    taken = await ana.post(f"{base}/take")
    assert (taken.status_code, taken.headers["location"]) == (303, base)
    again = await ana.post(f"{base}/take")  # a second click: back to the page, nothing written
    assert (again.status_code, again.headers["location"]) == (303, base)

    sent = await ana.post(f"{base}/messages", text="Hello, I am Ana.\r\nLet me look.")
    assert (sent.status_code, sent.headers["location"]) == (303, f"{base}#reply")
    for bad in ("", "   ", "x" * 2001, "bell\x07", "nul\x00"):
        response = await ana.post(f"{base}/messages", text=bad)
        assert response.status_code == 400, bad
        assert "The reply was not sent" in response.text
    assert (await ana.http.post(f"{base}/messages", data={"text": "no token"})).status_code == 403
    assert (await ana.post(f"{base}/messages", text="y" * 2000)).status_code == 303

    for path, data in ((f"{base}/messages", {"text": "Bo here"}), (f"{base}/release", {})):
        response = await bo.post(path, **data)
        assert response.status_code == 403
        assert "Only the agent who has this conversation can reply to it or hand it back" in response.text
    page = await bo.http.get(base)
    assert "Ana Agent has this conversation: only they can reply." in page.text
    assert 'name="text"' not in page.text

    row, said = await state(engine, cid)
    ana_id = await agent_id(engine, bank, "ana")
    assert [(m.role, m.text) for m in said] == [
        ("customer", "I want to talk to a person"),
        ("system", render_notice("joined", "zh-CN", name="Ana Agent")),  # in the customer's language
        ("agent", "Hello, I am Ana.\nLet me look."),  # what the widget's feed delivers
        ("agent", "y" * 2000),
    ]
    assert said[2].agent_name == "Ana Agent"

    released = await ana.post(f"{base}/release")
    assert (released.status_code, released.headers["location"]) == (303, "/console/queue")
    row, said = await state(engine, cid)
    assert (row["status"], row["agent_id"]) == ("bot", ana_id)
    assert (said[-1].role, said[-1].text) == ("system", render_notice("back", "zh-CN"))
    assert (await ana.post(f"{base}/messages", text="After")).status_code == 403
    assert (await ana.post(f"{base}/release")).status_code == 403
    late = await bo.post(f"{base}/take")
    assert late.status_code == 409
    assert "This conversation is not waiting any more." in late.text


async def test_the_page_shows_the_transcript_the_facts_and_the_answers_audit(
    browsers: Any, bank: Any, engine: AsyncEngine
) -> None:
    answer, cid = uuid.uuid4(), uuid.uuid4()
    async with engine.begin() as conn:
        await conversations.start(conn, bank.id, cid, "C-1001", "en")
        await conversations.append(conn, bank.id, cid, "customer", "Why is my bill <b>higher</b>?", account_ref="A-1")
        seq = await conversations.append(
            conn, bank.id, cid, "assistant", "Your bill went up by 12.00 EUR.", answer_id=answer
        )
        await conn.execute(
            text("UPDATE conversation_messages SET facts = CAST(:f AS jsonb) WHERE conversation_id = :c AND seq = :s"),
            {"f": json.dumps(FACTS), "c": cid, "s": seq},
        )
        await conversations.append(conn, bank.id, cid, "customer", "I want a person")
        await handovers.hand_over(conn, bank.id, cid, "requested")
    ana = await browsers(bank)
    page = await ana.http.get(f"/console/conversations/{cid}")
    assert page.status_code == 200
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert '<dd id="status">Waiting for an agent</dd>' in page.text
    assert "The customer asked for a person" in page.text
    assert "Why is my bill &lt;b&gt;higher&lt;/b&gt;?" in page.text  # the customer's words stay text
    roles = re.findall(r'<li class="message (\w+)" data-seq="(\d+)">', page.text)
    assert roles == [("customer", "1"), ("assistant", "2"), ("customer", "3")]
    assert f'href="/console/answers/{answer}"' in page.text
    for value in ("124.99 EUR", "112.99 EUR", "+12.00 EUR", "25 November 2026", "Purchases"):
        assert value in page.text
    assert 'href="/console/accounts/A-1"' in page.text
    assert 'data-after="3"' in page.text
    assert f'action="/console/conversations/{cid}/take"' in page.text
    assert 'name="text"' not in page.text  # nobody has it yet: no reply form
    await ana.post(f"/console/conversations/{cid}/take")
    page = await ana.http.get(f"/console/conversations/{cid}")
    assert '<dd id="status">With Ana Agent</dd>' in page.text
    assert f'action="/console/conversations/{cid}/messages"' in page.text
    assert f'action="/console/conversations/{cid}/release"' in page.text


async def _events(stream: AsyncIterator[str]) -> AsyncIterator[tuple[str, Any]]:
    name = ""
    async for line in stream:
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            yield name, json.loads(line.removeprefix("data: "))


async def test_the_events_feed_shows_new_messages_live(browsers: Any, bank: Any, engine: AsyncEngine) -> None:
    cid = await waiting(engine, bank)
    ana = await browsers(bank)
    base = f"/console/conversations/{cid}"
    async with ana.http.stream("GET", f"{base}/events", params={"after": 0}) as feed:
        assert feed.status_code == 200
        assert feed.headers["content-type"].startswith("text/event-stream")
        events = _events(feed.aiter_lines())

        async def next_event() -> tuple[str, Any]:
            return await asyncio.wait_for(anext(events), 5)

        assert await next_event() == ("status", {"status": "waiting", "agent_name": None, "agent_writing": False})
        name, first = await next_event()
        assert (name, first["seq"], first["text"]) == ("message", 1, "I want to talk to a person")
        assert (await ana.post(f"{base}/take")).status_code == 303
        seen = [await next_event() for _ in range(2)]
        assert ("status", {"status": "agent", "agent_name": "Ana Agent", "agent_writing": False}) in seen
        async with engine.begin() as conn:  # the customer writes (here: another replica's write)
            await conversations.append(conn, bank.id, cid, "customer", "Thank you!")
        name, said = await next_event()
        assert (name, said["role"], said["text"]) == ("message", "customer", "Thank you!")
        assert (await ana.post(f"{base}/messages", text="You are welcome.")).status_code == 303
        name, said = await next_event()
        assert (name, said["role"], said["text"], said["agent_name"]) == (
            "message",
            "agent",
            "You are welcome.",
            "Ana Agent",
        )
    assert (await ana.http.get(f"{base}/events", params={"after": -1})).status_code == 400
