"""A conversation's turn is written or the customer is told (issue 34, item 5). The turn is written after
the answer has streamed and been audited; here the database goes away right then: the turn's write
waits on a row this test holds, the proxy in front of the database cuts every connection of the app,
and refuses new ones. Before, the stream just ended after `final`: an audited answer that belongs to no
conversation, and a widget that cannot know."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.api.app import create_app
from app.data import conversations
from app.domain.vocabulary import Locale
from app.prompts import render_notice
from app.settings import Settings
from tests.chat_streams import sse
from tests.db_proxy import DatabaseProxy, waiting_on_a_lock
from tests.factories import customer, document
from tests.servers import ThreadedServer
from tests.waiting import until

ENV = {"ENGINE": "off", "SESSION_SECRET": "s" * 32, "API_KEY_CACHE_TTL": "0", "BATCH_WORKER": "0"}
FIRST = {"account_ref": "A-1", "question": "Why is my bill higher than last month?", "as_of": "2026-11-10"}
SECOND = {"account_ref": "A-1", "question": "Did my payment arrive?", "as_of": "2026-11-10"}
# The notice is in the answer's language: the question's.
SECOND_ZH = {"account_ref": "A-1", "question": "我的还款到账了吗？", "as_of": "2026-11-10"}


@asynccontextmanager
async def _serving(database_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """The app on a real port in a thread of its own: a request in flight leaves this loop free."""
    server = ThreadedServer(create_app(Settings.from_env(ENV), database_url))
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            yield client
    finally:
        server.stop()


async def _audit_turn(engine: AsyncEngine, answer_id: str) -> Any:
    async with engine.connect() as conn:
        return await conn.scalar(text("SELECT answer -> 'turn' FROM answers WHERE id = :id"), {"id": answer_id})


async def _held(engine: AsyncEngine, tenant_id: int, cid: uuid.UUID) -> AsyncConnection:
    """The conversation's row locked by this test: the turn's write waits for it."""
    conn = await engine.connect()
    await conn.begin()
    assert await conversations.find(conn, tenant_id, cid, lock=True) is not None
    return conn


async def _second_turn_held(
    client: httpx.AsyncClient, engine: AsyncEngine, tenant: Any, second: dict[str, str] = SECOND
) -> tuple[asyncio.Task[Any], AsyncConnection, uuid.UUID, dict[str, str]]:
    """A first turn written as usual; a second one answered and audited, its turn's write waiting."""
    session = await client.post(
        "/v1/sessions", json={"customer_ref": "C-1001"}, headers={"Authorization": f"Bearer {tenant.key}"}
    )
    auth = {"Authorization": f"Bearer {session.json()['token']}"}
    first = dict(sse((await client.post("/v1/chat", json=FIRST, headers=auth)).text))
    cid = uuid.UUID(first["conversation"]["conversation_id"])
    assert first["turn"]["assistant_seq"] == 2
    lock = await _held(engine, tenant.id, cid)
    asked = asyncio.create_task(client.post("/v1/chat", json=second | {"conversation_id": str(cid)}, headers=auth))
    await until("the turn's write to wait on the conversation's row", lambda: waiting_on_a_lock(engine))
    return asked, lock, cid, auth


@pytest.mark.parametrize(("second", "locale"), [(SECOND, "en"), (SECOND_ZH, "zh-CN")])
async def test_a_turn_that_cannot_be_written_ends_the_stream_with_an_error_and_its_audit_row_says_so(
    database_url: str,
    make_tenant: Any,
    load: Any,
    engine: AsyncEngine,
    database_proxy: tuple[DatabaseProxy, str],
    second: dict[str, str],
    locale: Locale,
) -> None:
    tenant = await make_tenant("interactive")
    await load(document(tenant.slug, [customer()]))
    cut, through = database_proxy
    async with _serving(through) as client:
        asked, lock, cid, _ = await _second_turn_held(client, engine, tenant, second)
        cut.set("refuse")  # every connection of the app cut, new ones refused
        try:
            response = await asyncio.wait_for(asked, 30)
        finally:
            await lock.rollback()
            await lock.close()
        events = sse(response.text)
        names = [name for name, _ in events]
        assert names[0] == "conversation"
        assert names[-2:] == ["final", "error"]
        assert "turn" not in names
        final, told = events[-2][1], events[-1][1]
        assert final["locale"] == locale
        assert told == {"error": "turn_not_saved", "message": render_notice("not_saved", locale)}
        assert final["explanation"]

        cut.set("forward")  # the database is back: the audit row says the turn was not recorded
        await until(
            "the audit row to say its turn was not recorded",
            lambda: _said_unrecorded(engine, final["answer_id"], cid),
            timeout_s=20,
        )
        async with engine.connect() as conn:
            kept = await conversations.messages(conn, tenant.id, cid)
        assert [m.seq for m in kept] == [1, 2]  # the first turn only: nothing half-written


async def _said_unrecorded(engine: AsyncEngine, answer_id: str, cid: uuid.UUID) -> bool:
    noted: object = await _audit_turn(engine, answer_id)
    return noted == {"conversation_id": str(cid), "recorded": False}


async def test_a_turn_whose_write_fails_once_is_written_when_the_database_is_back(
    database_url: str, make_tenant: Any, load: Any, engine: AsyncEngine, database_proxy: tuple[DatabaseProxy, str]
) -> None:
    tenant = await make_tenant("interactive")
    await load(document(tenant.slug, [customer()]))
    cut, through = database_proxy
    async with _serving(through) as client:
        asked, lock, cid, auth = await _second_turn_held(client, engine, tenant)
        cut.set("refuse")
        await lock.rollback()
        await lock.close()
        cut.set("forward")  # back within the write's retries
        events = dict(sse((await asyncio.wait_for(asked, 30)).text))
        assert "error" not in events
        assert (events["turn"]["customer_seq"], events["turn"]["assistant_seq"]) == (3, 4)
        transcript = (await client.get(f"/v1/chat/conversations/{cid}", headers=auth)).json()["messages"]
        assert [(m["seq"], m["role"]) for m in transcript] == [
            (1, "customer"),
            (2, "assistant"),
            (3, "customer"),
            (4, "assistant"),
        ]
        assert transcript[3]["answer_id"] == events["final"]["answer_id"]
        assert await _audit_turn(engine, events["final"]["answer_id"]) is None
