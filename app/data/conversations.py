"""The widget's conversations in Postgres: their messages in order, the handover to an agent and
the take that only one agent can win. Every statement is scoped by tenant (and, for a customer, by
customer): another bank's or another customer's conversation is exactly as unknown as a missing one."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import msgspec
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.domain.message_limits import WINDOW_S, Pace
from app.domain.vocabulary import ConversationStatus, HandoverReason, Locale, Role


class Conversation(msgspec.Struct, frozen=True, kw_only=True):
    id: uuid.UUID
    tenant_id: int
    customer_ref: str
    locale: Locale
    status: ConversationStatus
    handover_reason: HandoverReason | None
    waiting_since: datetime | None
    agent_id: int | None
    agent_name: str | None  # the agent's display name, once one has taken it
    last_seq: int
    created_at: datetime
    updated_at: datetime


class Message(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    seq: int
    role: Role
    text: str
    created_at: datetime
    account_ref: str | None = None
    answer_id: uuid.UUID | None = None
    facts: dict[str, Any] | None = None
    choices: list[str] | None = None
    agent_name: str | None = None


class Waiting(msgspec.Struct, frozen=True, kw_only=True):
    """A conversation in the console's queue."""

    id: uuid.UUID
    customer_ref: str
    handover_reason: HandoverReason
    waiting_since: datetime
    waiting_s: float
    last_text: str  # what the customer wrote last


_CONVERSATION = (
    "SELECT c.id, c.tenant_id, c.customer_ref, c.locale, c.status, c.handover_reason, c.waiting_since,"
    " c.agent_id, a.display_name AS agent_name, c.last_seq, c.created_at, c.updated_at"
    " FROM conversations c LEFT JOIN agents a ON a.id = c.agent_id"
)


async def start(
    conn: AsyncConnection, conversation_id: uuid.UUID, tenant_id: int, customer_ref: str, locale: Locale
) -> None:
    """A new conversation, under the id its first answer already gave the customer."""
    await conn.execute(
        text("INSERT INTO conversations (id, tenant_id, customer_ref, locale) VALUES (:id, :t, :c, :l)"),
        {"id": conversation_id, "t": tenant_id, "c": customer_ref, "l": locale},
    )


async def find(
    conn: AsyncConnection,
    tenant_id: int,
    conversation_id: uuid.UUID,
    customer_ref: str | None = None,
    *,
    lock: bool = False,
) -> Conversation | None:
    """The tenant's conversation (the customer's own, when `customer_ref` is given), or None. `lock`:
    its row is held to the end of the transaction (one writer at a time counts its messages)."""
    sql = f"{_CONVERSATION} WHERE c.id = :id AND c.tenant_id = :t"
    values: dict[str, Any] = {"id": conversation_id, "t": tenant_id}
    if customer_ref is not None:
        sql += " AND c.customer_ref = :c"
        values["c"] = customer_ref
    if lock:
        sql += " FOR UPDATE OF c"
    row = (await conn.execute(text(sql), values)).mappings().first()
    return None if row is None else Conversation(**row)


async def append(
    conn: AsyncConnection,
    conversation_id: uuid.UUID,
    role: Role,
    message_text: str,
    *,
    account_ref: str | None = None,
    answer_id: uuid.UUID | None = None,
    facts: msgspec.Struct | None = None,
    context: dict[str, Any] | None = None,
    choices: list[str] | None = None,
    agent_id: int | None = None,
) -> int:
    """Adds a message; its number. One statement: the counter and the row move together, so two
    writers (the customer and the agent) never get the same number."""
    row = (
        await conn.execute(
            text(
                "WITH n AS (UPDATE conversations SET last_seq = last_seq + 1, updated_at = now()"
                " WHERE id = :id RETURNING last_seq)"
                " INSERT INTO conversation_messages"
                " (conversation_id, seq, role, text, account_ref, answer_id, facts, context, choices, agent_id)"
                " SELECT :id, n.last_seq, :role, :text, :account, :answer,"
                " CAST(:facts AS jsonb), CAST(:context AS jsonb), CAST(:choices AS jsonb), :agent FROM n"
                " RETURNING seq"
            ),
            {
                "id": conversation_id,
                "role": role,
                "text": message_text,
                "account": account_ref,
                "answer": answer_id,
                "facts": _json(facts),
                "context": _json(context),
                "choices": _json(choices),
                "agent": agent_id,
            },
        )
    ).one()
    seq: int = row.seq
    return seq


def _json(value: object) -> str | None:
    return None if value is None else msgspec.json.encode(value).decode()


_MESSAGES = (
    "SELECT m.seq, m.role, m.text, m.created_at, m.account_ref, m.answer_id, m.facts, m.choices,"
    " a.display_name AS agent_name"
    " FROM conversation_messages m LEFT JOIN agents a ON a.id = m.agent_id"
)


async def messages(
    conn: AsyncConnection, conversation_id: uuid.UUID, after: int = 0, limit: int | None = None
) -> list[Message]:
    """The messages after number `after` (the first `limit` of them), in order (the caller has found the
    conversation in scope)."""
    rows = (
        await conn.execute(
            text(f"{_MESSAGES} WHERE m.conversation_id = :id AND m.seq > :after ORDER BY m.seq LIMIT :limit"),
            {"id": conversation_id, "after": after, "limit": limit},
        )
    ).mappings()
    return [Message(**row) for row in rows]


async def latest(
    conn: AsyncConnection, conversation_id: uuid.UUID, limit: int, before: int | None = None
) -> list[Message]:
    """The last `limit` messages before number `before` (the conversation's last, without it), in order:
    a page of the transcript, however long the conversation is."""
    rows = (
        await conn.execute(
            text(
                f"SELECT * FROM ({_MESSAGES} WHERE m.conversation_id = :id AND (m.seq < :before OR :before IS NULL)"
                " ORDER BY m.seq DESC LIMIT :limit) page ORDER BY seq"
            ),
            {"id": conversation_id, "before": before, "limit": limit},
        )
    ).mappings()
    return [Message(**row) for row in rows]


async def pace(conn: AsyncConnection, conversation_id: uuid.UUID) -> Pace:
    """What the customer wrote into the conversation in the last minute, and since its last reply."""
    row = (
        await conn.execute(
            text(
                "SELECT count(*) FILTER (WHERE m.created_at > now() - make_interval(secs => :window)) AS last_minute,"
                " coalesce(extract(epoch FROM now() - min(m.created_at)"
                "  FILTER (WHERE m.created_at > now() - make_interval(secs => :window))), 0)::float8"
                "  AS oldest_in_minute_s,"
                " count(*) FILTER (WHERE m.seq > r.replied) AS unanswered,"
                " coalesce(sum(length(m.text)) FILTER (WHERE m.seq > r.replied), 0)::int AS unanswered_chars"
                " FROM conversation_messages m, (SELECT coalesce(max(seq), 0) AS replied FROM conversation_messages"
                "  WHERE conversation_id = :id AND role <> 'customer') r"
                " WHERE m.conversation_id = :id AND m.role = 'customer'"
            ),
            {"id": conversation_id, "window": WINDOW_S},
        )
    ).one()
    return Pace(**row._mapping)


async def last_context(conn: AsyncConnection, conversation_id: uuid.UUID) -> dict[str, Any] | None:
    """What the latest assistant turn took its question to be: the next follow-up's context."""
    row = (
        await conn.execute(
            text(
                "SELECT context FROM conversation_messages WHERE conversation_id = :id AND role = 'assistant'"
                " AND context IS NOT NULL ORDER BY seq DESC LIMIT 1"
            ),
            {"id": conversation_id},
        )
    ).first()
    return None if row is None else dict(row.context)


async def hand_over(conn: AsyncConnection, conversation_id: uuid.UUID, reason: HandoverReason) -> bool:
    """Puts a conversation the assistant answers in the agents' queue; False when it already is in it
    or with an agent."""
    row = (
        await conn.execute(
            text(
                "UPDATE conversations SET status = 'waiting', handover_reason = :reason, waiting_since = now()"
                " WHERE id = :id AND status = 'bot' RETURNING id"
            ),
            {"id": conversation_id, "reason": reason},
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


async def queue(conn: AsyncConnection, tenant_id: int) -> list[Waiting]:
    """The bank's conversations waiting for an agent, longest waiting first."""
    rows = (
        await conn.execute(
            text(
                "SELECT c.id, c.customer_ref, c.handover_reason, c.waiting_since,"
                " extract(epoch FROM now() - c.waiting_since)::float8 AS waiting_s,"
                " (SELECT m.text FROM conversation_messages m WHERE m.conversation_id = c.id"
                "  AND m.role = 'customer' ORDER BY m.seq DESC LIMIT 1) AS last_text"
                " FROM conversations c WHERE c.tenant_id = :t AND c.status = 'waiting'"
                " ORDER BY c.waiting_since LIMIT 200"
            ),
            {"t": tenant_id},
        )
    ).mappings()
    return [Waiting(**{**row, "last_text": row["last_text"] or ""}) for row in rows]


async def purge(conn: AsyncConnection, older_than: timedelta) -> int:
    """Deletes the conversations (and their messages) with no message for `older_than`; how many.
    The answers' audit rows stay: they have their own life."""
    result = await conn.execute(
        text("DELETE FROM conversations WHERE updated_at < now() - CAST(:age AS interval)"), {"age": older_than}
    )
    return result.rowcount
