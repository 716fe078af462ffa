"""A conversation's live feed, asked for messages after a number no message can have (issue 34, item 1):
a clear 400 before any stream starts, for the customer's widget and the agent's console, through a
real server; the largest number a message can have still opens the feed."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from app.api.app import create_app
from app.settings import Settings
from tests.console import signed_in
from tests.servers import ThreadedServer

LARGEST = 2**31 - 1  # message numbers are Postgres integers


@pytest.fixture
def server(database_url: str) -> Iterator[ThreadedServer]:
    env = {"ENGINE": "off", "SESSION_SECRET": "s" * 32, "API_KEY_CACHE_TTL": "0", "COOKIE_SECURE": "0"}
    running = ThreadedServer(create_app(Settings.from_env(env), database_url))
    yield running
    running.stop()


@pytest.fixture
async def conversation(server: ThreadedServer, make_bank: Any) -> Any:
    """Ann's conversation (one question asked) at a bank with an agent; its id and her token."""
    tenant = await make_bank(agents=("ana",))
    async with httpx.AsyncClient(base_url=server.url) as http:
        key = {"Authorization": f"Bearer {tenant.key}"}
        token = (await http.post("/v1/sessions", json={"customer_ref": "C-1001"}, headers=key)).json()["token"]
        auth = {"Authorization": f"Bearer {token}"}
        asked = await http.post("/v1/chat", json={"account_ref": "A-1", "question": "Why?"}, headers=auth)
    first = asked.text.split("\n\n", 1)[0]
    data = json.loads(re.search(r"^data: (.*)$", first, re.M).group(1))  # type: ignore[union-attr]
    return tenant, data["conversation_id"], auth


@pytest.mark.parametrize("after", [str(LARGEST + 1), str(2**63), "1" + "0" * 30, "-1", str(-(2**31) - 1)])
async def test_a_number_no_message_can_have_is_a_400_before_any_stream(
    server: ThreadedServer, conversation: Any, after: str
) -> None:
    tenant, cid, auth = conversation
    async with httpx.AsyncClient(base_url=server.url) as http:
        r = await http.get(f"/v1/chat/conversations/{cid}/events", params={"after": after}, headers=auth)
        assert r.status_code == 400
        assert "after" in r.text
        await signed_in(http, tenant.slug)
        console = await http.get(f"/console/conversations/{cid}/events", params={"after": after})
        assert console.status_code == 400


async def test_the_largest_message_number_still_opens_the_feed(server: ThreadedServer, conversation: Any) -> None:
    _, cid, auth = conversation
    url = f"{server.url}/v1/chat/conversations/{cid}/events"
    async with httpx.AsyncClient() as http, http.stream("GET", url, params={"after": LARGEST}, headers=auth) as r:
        assert r.status_code == 200
        async for chunk in r.aiter_text():
            assert chunk.startswith("event: status")  # the conversation's status comes first, at once
            break
