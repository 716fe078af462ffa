"""While the agent who has a conversation types a reply, the customer's feed says so (its status event's
`agent_writing`), and stops saying it when the reply is sent or the mark lapses. Only that agent may
mark it: another agent of the bank is refused, another bank's gets a 404."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from app.api.app import create_app
from app.conversations.service import WRITING_S
from tests.chat_streams import waiting_conversation
from tests.console import console_settings, signed_in
from tests.servers import ThreadedServer

pytestmark = pytest.mark.bank(agents=("ana", "bo"))


@pytest.fixture
def server(database_url: str) -> Iterator[ThreadedServer]:
    running = ThreadedServer(create_app(console_settings(SESSION_SECRET="s" * 32, API_KEY_CACHE_TTL="0"), database_url))
    yield running
    running.stop()


async def statuses(http: httpx.AsyncClient, cid: str, auth: dict[str, str]) -> AsyncGenerator[dict[str, Any]]:
    """The customer's feed's status events, as they come."""
    async with http.stream("GET", f"/v1/chat/conversations/{cid}/events", headers=auth) as feed:
        name = ""
        async for line in feed.aiter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: ") and name == "status":
                yield json.loads(line[6:])


async def next_status(events: AsyncIterator[dict[str, Any]], within_s: float) -> dict[str, Any]:
    return await asyncio.wait_for(anext(events), within_s)


async def test_the_customer_sees_the_agent_writing_until_the_reply_is_sent(
    server: ThreadedServer, bank: Any, make_bank: Any
) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as customer:
        auth, cid = await waiting_conversation(customer, bank.key)  # type: ignore[arg-type]
        async with (
            httpx.AsyncClient(base_url=server.url, timeout=30) as ana,
            httpx.AsyncClient(base_url=server.url, timeout=30) as bo,
        ):
            csrf = await signed_in(ana, bank.slug)
            assert (await ana.post(f"/console/conversations/{cid}/take", data={"csrf_token": csrf})).status_code == 303
            events = statuses(customer, cid, auth)
            first = await next_status(events, 5)
            assert (first["status"], first["agent_name"], first["agent_writing"]) == ("agent", "Ana Agent", False)

            # Bo, of the same bank, does not have it: refused, and the customer hears nothing.
            bo_csrf = await signed_in(bo, bank.slug, "bo")
            refused = await bo.post(f"/console/conversations/{cid}/writing", data={"csrf_token": bo_csrf})
            assert refused.status_code == 403
            # Nor without the session's CSRF token.
            assert (await ana.post(f"/console/conversations/{cid}/writing", data={})).status_code == 403

            marked = await ana.post(f"/console/conversations/{cid}/writing", data={"csrf_token": csrf})
            assert marked.status_code == 204
            assert (await next_status(events, 5))["agent_writing"] is True
            sent = await ana.post(f"/console/conversations/{cid}/messages", data={"csrf_token": csrf, "text": "Hi!"})
            assert sent.status_code == 303
            assert (await next_status(events, 5))["agent_writing"] is False  # the reply ends it at once

            # A mark the agent does not renew lapses on its own.
            await ana.post(f"/console/conversations/{cid}/writing", data={"csrf_token": csrf})
            assert (await next_status(events, 5))["agent_writing"] is True
            assert (await next_status(events, WRITING_S + 3))["agent_writing"] is False
            await events.aclose()

        other = await make_bank(agents=("ana",))
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as stranger:
            their_csrf = await signed_in(stranger, other.slug)
            missing = await stranger.post(f"/console/conversations/{cid}/writing", data={"csrf_token": their_csrf})
            assert missing.status_code == 404
