"""A conversation never crosses tenants: with another bank's tenant (the same customer reference, the
same agent id), every operation of the conversation service (app/conversations/service.py) and every
statement of app/data/conversations.py, handovers.py and turns.py finds nothing, changes nothing and
says "not found" exactly as for a missing conversation; the owning bank's conversation stays as it was."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.conversations.service import ConversationService, purge
from app.conversations.values import Agent
from app.conversations.wakeups import Wakeups
from app.data import conversations, handovers, turns
from app.data.agents import create_agent
from app.data.database import autocommit
from app.domain.message_limits import MessageCaps
from app.errors import NotFound

CAPS = MessageCaps(per_minute=100, unanswered=100, unanswered_chars=10_000)


async def _bank(make_bank: Any, engine: AsyncEngine, username: str) -> tuple[Any, Agent]:
    tenant = await make_bank()  # every bank has a customer C-1001 with account A-1
    async with engine.begin() as conn:
        agent_id = await create_agent(conn, tenant.id, username, username.title(), "a long enough password 1")
    agent = Agent(tenant_id=tenant.id, tenant_slug=tenant.slug, agent_id=agent_id, display_name=username.title())
    return tenant, agent


async def test_another_banks_conversation_is_not_found_by_any_operation(make_bank: Any, engine: AsyncEngine) -> None:
    ours, ana = await _bank(make_bank, engine, "ana")
    theirs, zed = await _bank(make_bank, engine, "zed")
    service = ConversationService(engine, Wakeups())
    cid, answer = uuid.uuid4(), uuid.uuid4()
    async with engine.begin() as conn:
        await conversations.start(conn, ours.id, cid, "C-1001", "en")
        await conversations.append(conn, ours.id, cid, "customer", "Why is my bill higher?", account_ref="A-1")
        await conversations.append(conn, ours.id, cid, "assistant", "It went up by 12.00 EUR.", answer_id=answer)
        assert await handovers.hand_over(conn, ours.id, cid, "requested")
    async with autocommit(engine) as conn:
        before = await conversations.messages(conn, ours.id, cid)
    assert len(before) == 2

    # Every step of the service, as the other bank (its agent, its customer C-1001).
    for step in (
        service.find(theirs.id, cid),
        service.find(theirs.id, cid, "C-1001"),
        service.continuing(theirs.id, "C-1001", cid),
        service.transcript(theirs.id, cid),
        service.to_person(theirs.id, "C-1001", cid, "Hello?", "A-1", CAPS),
        service.take(zed, cid),
        service.mine(zed, cid),
        service.reply(zed, cid, "Hello, I am Zed."),
        service.release(zed, cid),
    ):
        with pytest.raises(NotFound):
            await step
    assert await service.poll(theirs.id, cid, 0, first=True) is None
    assert cid not in {w.id for w in await service.queue(theirs.id)}

    # Every statement, as the other bank.
    async with engine.begin() as conn:
        assert await conversations.find(conn, theirs.id, cid) is None
        assert await conversations.messages(conn, theirs.id, cid) == []
        assert await conversations.latest(conn, theirs.id, cid, 50) == []
        assert await conversations.last_context(conn, theirs.id, cid) is None
        assert (await conversations.pace(conn, theirs.id, cid)).unanswered == 0
        with pytest.raises(NotFound):
            await conversations.append(conn, theirs.id, cid, "agent", "Hello from another bank.")
        assert not await handovers.hand_over(conn, theirs.id, cid, "fallbacks")
        assert await handovers.take(conn, theirs.id, cid, zed.agent_id) is None
        assert not await handovers.release(conn, theirs.id, cid, zed.agent_id)
        assert await turns.recorded(conn, theirs.id, cid, answer, 0) is None
        assert await conversations.purge(conn, theirs.id, timedelta(0)) == 0

    # Ours is as it was: its two messages, waiting, in our queue only; then our agent takes it.
    async with autocommit(engine) as conn:
        assert await conversations.messages(conn, ours.id, cid) == before
        assert (await conversations.pace(conn, ours.id, cid)).unanswered == 0
    found = await service.find(ours.id, cid)
    assert (found.status, found.handover_reason, found.agent_id) == ("waiting", "requested", None)
    assert [w.id for w in await service.queue(ours.id)] == [cid]
    assert (await service.transcript(ours.id, cid)).messages == before
    async with autocommit(engine) as conn:
        recorded = await turns.recorded(conn, ours.id, cid, answer, 0)
    assert recorded is not None
    assert recorded.assistant_seq == 2
    await service.take(ana, cid)
    assert (await service.mine(ana, cid)).agent_id == ana.agent_id


async def test_the_retention_purges_every_bank_and_only_what_is_idle(make_bank: Any, engine: AsyncEngine) -> None:
    ours, _ = await _bank(make_bank, engine, "ana")
    theirs, _ = await _bank(make_bank, engine, "zed")
    idle, ours_fresh, theirs_idle = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    async with engine.begin() as conn:
        for tenant, cid in ((ours.id, idle), (ours.id, ours_fresh), (theirs.id, theirs_idle)):
            await conversations.start(conn, tenant, cid, "C-1001", "en")
            await conversations.append(conn, tenant, cid, "customer", "Hello")
    async with engine.begin() as conn:  # two of them idle for 40 days
        await conversations.purge(conn, ours.id, timedelta(days=3650))  # nothing that old
        for tenant, cid in ((ours.id, idle), (theirs.id, theirs_idle)):
            assert await _age(conn, tenant, cid)
        assert await purge(conn, timedelta(days=30)) >= 2
    service = ConversationService(engine, Wakeups())
    await service.find(ours.id, ours_fresh)
    for tenant, cid in ((ours.id, idle), (theirs.id, theirs_idle)):
        with pytest.raises(NotFound):
            await service.find(tenant, cid)


async def _age(conn: AsyncConnection, tenant_id: int, cid: uuid.UUID) -> bool:
    """Makes the conversation look 40 days idle (tests only: the service never back-dates)."""
    result = await conn.execute(
        text("UPDATE conversations SET updated_at = now() - interval '40 days' WHERE id = :id AND tenant_id = :t"),
        {"id": cid, "t": tenant_id},
    )
    return bool(result.rowcount)
