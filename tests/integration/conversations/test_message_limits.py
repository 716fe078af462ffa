"""A customer's messages into a conversation a person answers are limited (issue 34, item 3): each takes
a token of the bank's rate, like a question, and a conversation takes at most so many a minute and so
many (and so many characters) in a row before a reply; beyond, 429 with Retry-After and nothing stored.
Before, 3,000 such messages were all stored, and 100 at 50/s beat a rate of 5/s."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.app import create_app
from app.data import conversations
from app.data.tenants import set_limits
from app.settings import Settings
from tests.chat_streams import waiting_conversation
from tests.factories import customer, document

BASE = {"ENGINE": "off", "SESSION_SECRET": "s" * 32, "API_KEY_CACHE_TTL": "0", "BATCH_WORKER": "0"}
ROOMY = {"CONVERSATION_MESSAGES_PER_MINUTE": "1000", "CONVERSATION_UNANSWERED_MAX": "1000"}


async def _bank(make_tenant: Any, load: Any) -> Any:
    tenant = await make_tenant("interactive")
    await load(document(tenant.slug, [customer()]))
    return tenant


def _app(database_url: str, **env: str) -> Any:
    return create_app(Settings.from_env(BASE | env), database_url)


async def _stored(client: AsyncTestClient[Any], auth: dict[str, str], cid: str) -> int:
    """The customer's messages in the conversation."""
    transcript = (await client.get(f"/v1/chat/conversations/{cid}", headers=auth)).json()["messages"]
    return sum(1 for m in transcript if m["role"] == "customer")


def _say(client: AsyncTestClient[Any], auth: dict[str, str], cid: str, text: str = "Are you there?") -> Any:
    body = {"account_ref": "A-1", "question": text, "conversation_id": cid}
    return client.post("/v1/chat", json=body, headers=auth)


def _refused(response: httpx.Response, error: str) -> None:
    assert response.status_code == 429, response.text
    body = response.json()
    assert (body["status"], body["error"]) == (429, error)
    assert 1 <= int(response.headers["retry-after"]) <= 60
    assert body["retry_after_s"] == int(response.headers["retry-after"])


async def test_a_conversation_takes_so_many_messages_a_minute(database_url: str, make_tenant: Any, load: Any) -> None:
    tenant = await _bank(make_tenant, load)
    async with AsyncTestClient(app=_app(database_url, CONVERSATION_MESSAGES_PER_MINUTE="5")) as client:
        auth, cid = await waiting_conversation(client, tenant.key)
        before = await _stored(client, auth, cid)
        assert before == 1  # the question that asked for a person: one of the minute's five
        sent = [await _say(client, auth, cid) for _ in range(8)]
        assert [r.status_code for r in sent] == [200] * 4 + [429] * 4
        for refused in sent[4:]:
            _refused(refused, "too_many_messages")
        assert "5 messages a minute" in sent[4].json()["message"]
        assert await _stored(client, auth, cid) - before == 4


async def test_a_conversation_takes_so_many_messages_and_characters_before_a_reply(
    database_url: str, make_tenant: Any, load: Any, engine: AsyncEngine
) -> None:
    tenant = await _bank(make_tenant, load)
    caps = {"CONVERSATION_MESSAGES_PER_MINUTE": "1000", "CONVERSATION_UNANSWERED_MAX": "3"}
    async with AsyncTestClient(app=_app(database_url, **caps, CONVERSATION_UNANSWERED_CHARS="100")) as client:
        auth, cid = await waiting_conversation(client, tenant.key)
        before = await _stored(client, auth, cid)
        sent = [await _say(client, auth, cid) for _ in range(4)]
        assert [r.status_code for r in sent] == [200, 200, 200, 429]
        _refused(sent[3], "too_many_messages")
        assert "3 messages in a row" in sent[3].json()["message"]
        async with engine.begin() as conn:  # the agent replies: the customer may write again
            await conversations.append(conn, tenant.id, uuid.UUID(cid), "agent", "Hello, I am here.")
        assert (await _say(client, auth, cid, "x" * 60)).status_code == 200
        too_long = await _say(client, auth, cid, "y" * 41)  # 60 + 41 characters in a row: over 100
        _refused(too_long, "too_many_messages")
        assert "100 characters in a row" in too_long.json()["message"]
        assert (await _say(client, auth, cid, "z" * 40)).status_code == 200
        assert await _stored(client, auth, cid) - before == 5


@pytest.mark.parametrize("admission", ["local", "shared"])
async def test_messages_to_a_person_take_the_banks_rate(
    database_url: str, make_tenant: Any, load: Any, engine: AsyncEngine, admission: str
) -> None:
    """100 messages at once at a rate of 0.5/s: most are 429 `rate_limited`, as questions are, and the
    refused ones are not stored. (At 5/s a slow machine refilled the bucket before the last question.)"""
    tenant = await _bank(make_tenant, load)
    async with AsyncTestClient(app=_app(database_url, ADMISSION=admission, **ROOMY)) as client:
        auth, cid = await waiting_conversation(client, tenant.key)
        async with engine.begin() as conn:
            await set_limits(conn, tenant.slug, {"rate_limit_per_s": 0.5})
        before = await _stored(client, auth, cid)
        sent = await asyncio.gather(*(_say(client, auth, cid) for _ in range(100)))
        statuses = [r.status_code for r in sent]
        assert set(statuses) == {200, 429}
        assert statuses.count(429) >= 80, statuses  # a burst of 1, then one every 2 s for as long as this takes
        for refused in (r for r in sent if r.status_code == 429):
            _refused(refused, "rate_limited")
        assert await _stored(client, auth, cid) - before == statuses.count(200)
        question = {"account_ref": "A-1", "question": "Why is my bill higher?"}  # the same bucket
        assert (await client.post("/v1/chat", json=question, headers=auth)).status_code == 429
