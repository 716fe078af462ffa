"""A long conversation stays a small page (issue 34, item 3): the console's conversation page, the
widget's conversation JSON and a live feed's first load hold the latest PAGE messages, and earlier
ones are a page back (`?before=`). Before, 3,000 messages made a 3.46 MB console page."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.app import create_app
from app.data import conversations
from app.domain.vocabulary import Role
from app.settings import Settings
from tests.console import signed_in
from tests.servers import ThreadedServer

COUNT = 300
PAGE = 50  # app/api/conversation_feed.py; the page sizes below follow from it
ENV = {"ENGINE": "off", "SESSION_SECRET": "s" * 32, "COOKIE_SECURE": "0", "BATCH_WORKER": "0"}


def _text(n: int) -> str:
    return f"message {n:04d}: " + "x" * 900


async def _long_conversation(engine: AsyncEngine, tenant_id: int) -> uuid.UUID:
    """COUNT messages, the customer's and an agent's in turn, written as the routes write them."""
    cid = uuid.uuid4()
    async with engine.begin() as conn:
        await conversations.start(conn, tenant_id, cid, "C-1001", "en")
        for n in range(1, COUNT + 1):
            role: Role = "customer" if n % 2 else "agent"
            await conversations.append(
                conn, tenant_id, cid, role, _text(n), account_ref="A-1" if role == "customer" else None
            )
    return cid


def _seqs(page: str) -> list[int]:
    return [int(n) for n in re.findall(r'data-seq="(\d+)"', page)]


async def test_the_console_page_and_the_json_hold_the_latest_page_and_page_back(
    database_url: str, make_bank: Any, engine: AsyncEngine
) -> None:
    tenant = await make_bank(agents=("ana",))
    cid = await _long_conversation(engine, tenant.id)
    server = ThreadedServer(create_app(Settings.from_env(ENV), database_url))
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            session = await client.post(
                "/v1/sessions", json={"customer_ref": "C-1001"}, headers={"Authorization": f"Bearer {tenant.key}"}
            )
            auth = {"Authorization": f"Bearer {session.json()['token']}"}

            latest = await client.get(f"/v1/chat/conversations/{cid}", headers=auth)
            assert len(latest.content) < 80_000  # all 300: about 290 KB
            body = latest.json()
            assert [m["seq"] for m in body["messages"]] == list(range(COUNT - PAGE + 1, COUNT + 1))
            assert body["earlier"] == COUNT - PAGE + 1
            back = (await client.get(f"/v1/chat/conversations/{cid}?before={body['earlier']}", headers=auth)).json()
            assert [m["text"] for m in back["messages"]] == [_text(n) for n in range(201, 251)]
            assert back["earlier"] == 201
            first = (await client.get(f"/v1/chat/conversations/{cid}?before=2", headers=auth)).json()
            assert ([m["seq"] for m in first["messages"]], first["earlier"]) == ([1], None)
            bad = await client.get(f"/v1/chat/conversations/{cid}?before=0", headers=auth)
            assert bad.status_code == 400

            await signed_in(client, tenant.slug)
            page = await client.get(f"/console/conversations/{cid}")
            assert page.status_code == 200
            assert len(page.content) < 100_000  # all 300: about 330 KB
            assert _seqs(page.text) == list(range(COUNT - PAGE + 1, COUNT + 1))
            assert f'href="/console/conversations/{cid}?before=251">Earlier messages' in page.text
            assert _text(1) not in page.text
            earlier = await client.get(f"/console/conversations/{cid}?before=251")
            assert _seqs(earlier.text) == list(range(201, 251))
            assert _text(201) in earlier.text
            assert _text(251) not in earlier.text
            assert 'id="transcript"' not in earlier.text  # no live feed appends to an earlier page
            assert f'href="/console/conversations/{cid}">Latest messages' in earlier.text

            # A feed opened from the start sends the latest page, not the whole conversation.
            seen: list[int] = []
            async with client.stream("GET", f"/v1/chat/conversations/{cid}/events?after=0", headers=auth) as feed:
                async for line in feed.aiter_lines():
                    if line.startswith("data: ") and '"seq"' in line:
                        seen.append(json.loads(line[6:])["seq"])
                        if seen[-1] == COUNT:
                            break
            assert seen == list(range(COUNT - PAGE + 1, COUNT + 1))
    finally:
        server.stop()
