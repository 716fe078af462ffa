"""A conversation's handover in Postgres: put in the bank's queue, taken by one agent (of two taking it
at once exactly one wins), handed back to the assistant; and the queue the console shows. Scoped by
tenant, like every conversation's statement (app/data/conversations.py)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import msgspec
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.domain.vocabulary import HandoverReason, Locale


class Waiting(msgspec.Struct, frozen=True, kw_only=True):
    """A conversation in the console's queue, with what tells it apart from the customer's others."""

    id: uuid.UUID
    customer_ref: str
    locale: Locale  # the conversation's language
    handover_reason: HandoverReason
    started_at: datetime  # the conversation's first message
    waiting_since: datetime  # the handover
    waiting_s: float
    first_question: str  # what the customer asked first
    last_text: str  # what the customer wrote last
    last_at: datetime | None  # when


async def hand_over(conn: AsyncConnection, tenant_id: int, conversation_id: uuid.UUID, reason: HandoverReason) -> bool:
    """Puts a conversation the assistant answers in the agents' queue; False when it already is in it
    or with an agent."""
    row = (
        await conn.execute(
            text(
                "UPDATE conversations SET status = 'waiting', handover_reason = :reason, waiting_since = now()"
                " WHERE id = :id AND tenant_id = :t AND status = 'bot' RETURNING id"
            ),
            {"id": conversation_id, "t": tenant_id, "reason": reason},
        )
    ).first()
    return row is not None


async def take(conn: AsyncConnection, tenant_id: int, conversation_id: uuid.UUID, agent_id: int) -> timedelta | None:
    """The agent takes a waiting conversation of their bank: how long it waited, or None when it is
    not waiting (any more). One statement, so of two agents taking it at once exactly one wins."""
    row = (
        await conn.execute(
            text(
                "UPDATE conversations SET status = 'agent', agent_id = :agent, taken_at = now()"
                " WHERE id = :id AND tenant_id = :t AND status = 'waiting'"
                " RETURNING now() - waiting_since AS waited"
            ),
            {"id": conversation_id, "t": tenant_id, "agent": agent_id},
        )
    ).first()
    return None if row is None else row.waited


async def release(conn: AsyncConnection, tenant_id: int, conversation_id: uuid.UUID, agent_id: int) -> bool:
    """The agent who has the conversation hands it back to the assistant."""
    row = (
        await conn.execute(
            text(
                "UPDATE conversations SET status = 'bot', handover_reason = NULL, waiting_since = NULL"
                " WHERE id = :id AND tenant_id = :t AND status = 'agent' AND agent_id = :agent RETURNING id"
            ),
            {"id": conversation_id, "t": tenant_id, "agent": agent_id},
        )
    ).first()
    return row is not None


async def mark_writing(
    conn: AsyncConnection, tenant_id: int, conversation_id: uuid.UUID, agent_id: int, s: float
) -> bool:
    """The agent who has the conversation is writing, for the next `s` seconds; False: not theirs."""
    row = await conn.execute(
        text(
            "UPDATE conversations SET agent_writing_until = now() + make_interval(secs => :s)"
            " WHERE id = :id AND tenant_id = :t AND status = 'agent' AND agent_id = :a RETURNING 1"
        ),
        {"s": s, "id": conversation_id, "t": tenant_id, "a": agent_id},
    )
    return row.first() is not None


async def queue(conn: AsyncConnection, tenant_id: int) -> list[Waiting]:
    """The bank's conversations waiting for an agent, longest waiting first."""
    rows = (
        await conn.execute(
            text(
                "SELECT c.id, c.customer_ref, c.locale, c.handover_reason, c.created_at AS started_at,"
                " c.waiting_since, extract(epoch FROM now() - c.waiting_since)::float8 AS waiting_s,"
                " coalesce(f.text, '') AS first_question, coalesce(l.text, '') AS last_text, l.created_at AS last_at"
                " FROM conversations c"
                " LEFT JOIN LATERAL (SELECT m.text FROM conversation_messages m WHERE m.conversation_id = c.id"
                "  AND m.role = 'customer' ORDER BY m.seq LIMIT 1) f ON true"
                " LEFT JOIN LATERAL (SELECT m.text, m.created_at FROM conversation_messages m"
                "  WHERE m.conversation_id = c.id AND m.role = 'customer' ORDER BY m.seq DESC LIMIT 1) l ON true"
                " WHERE c.tenant_id = :t AND c.status = 'waiting'"
                " ORDER BY c.waiting_since LIMIT 200"
            ),
            {"t": tenant_id},
        )
    ).mappings()
    return [Waiting(**row) for row in rows]
