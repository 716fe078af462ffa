"""Console forms whose bytes are not UTF-8 (issue 34, item 7): a reply or a sign-in with an invalid
byte is a 400 that says so, and nothing is stored, where Litestar would have stored U+FFFD in its
place (the JSON API already refuses such bodies). Through a real server, as a browser posts."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.app import create_app
from app.data import conversations, handovers
from app.settings import Settings
from tests.console import csrf_of, signed_in
from tests.servers import ThreadedServer

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@pytest.fixture
async def agent(database_url: str, make_bank: Any, engine: AsyncEngine) -> AsyncIterator[Any]:
    """Ana, signed in, holding Ann's conversation; her browser, the conversation's id and page's CSRF token."""
    bank = await make_bank(agents=("ana",))
    cid = uuid.uuid4()
    async with engine.begin() as conn:
        await conversations.start(conn, bank.id, cid, "C-1001", "en")
        await conversations.append(conn, bank.id, cid, "customer", "I want to talk to a person", account_ref="A-1")
        assert await handovers.hand_over(conn, bank.id, cid, "requested")
    env = {"ENGINE": "off", "COOKIE_SECURE": "0", "BATCH_WORKER": "0", "SESSION_SECRET": "s" * 32}
    server = ThreadedServer(create_app(Settings.from_env(env), database_url))
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        login = await http.get("/console/login")
        bad = f"csrf_token={csrf_of(login)}&tenant={bank.slug}%FF&username=ana&password=x".encode()
        refused = await http.post("/console/login", content=bad, headers=FORM)
        assert refused.status_code == 400
        assert "holds characters the console does not accept" in refused.text
        csrf = await signed_in(http, bank.slug)
        assert (await http.post(f"/console/conversations/{cid}/take", data={"csrf_token": csrf})).status_code == 303
        yield http, bank.id, cid, csrf
    server.stop()


async def test_a_reply_that_is_not_utf8_is_a_400_and_is_not_stored(agent: Any, engine: AsyncEngine) -> None:
    http, tenant_id, cid, csrf = agent
    path = f"/console/conversations/{cid}/messages"
    for body in (f"csrf_token={csrf}&text=caf%E9".encode(), f"csrf_token={csrf}&text=%C3%28ok".encode()):
        refused = await http.post(path, content=body, headers=FORM)
        assert refused.status_code == 400
        assert "holds characters the console does not accept" in refused.text
    multipart = await http.post(path, data={"csrf_token": csrf}, files={"text": (None, b"caf\xe9")})
    assert multipart.status_code == 400
    sent = await http.post(path, content=f"csrf_token={csrf}&text=caf%C3%A9".encode(), headers=FORM)
    assert sent.status_code == 303
    async with engine.begin() as conn:
        said = [(m.role, m.text) for m in await conversations.messages(conn, tenant_id, cid)]
    assert said == [
        ("customer", "I want to talk to a person"),
        ("system", "Ana Agent has joined the conversation."),
        ("agent", "café"),
    ]
