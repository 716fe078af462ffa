"""The widget's conversations in Postgres: the conversation's row and its messages in order. Every
statement is scoped by tenant (and, for a customer, by customer): another bank's or another
customer's conversation is exactly as unknown as a missing one. The handover's statements (the
queue, the take only one agent can win) are in app/data/handovers.py."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import msgspec
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.domain.claims import AnyClaim
from app.domain.message_limits import WINDOW_S, Pace
from app.domain.vocabulary import ConversationStatus, HandoverReason, Intent, Locale, Role
from app.errors import NotFound


class Conversation(msgspec.Struct, frozen=True, kw_only=True):
    id: uuid.UUID
    tenant_id: int
    customer_ref: str
    locale: Locale  # its first question's language (the customer's, when that did not say)
    status: ConversationStatus
    handover_reason: HandoverReason | None
    waiting_since: datetime | None
    agent_id: int | None
    agent_name: str | None  # the agent's display name, once one has taken it
    last_seq: int
    created_at: datetime
    updated_at: datetime
    agent_writing: bool = False  # the agent who has it is typing a reply (its mark not yet lapsed)


class Message(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    seq: int
    role: Role
    text: str
    created_at: datetime
    locale: str | None = None  # the language it was written or answered in (none before migration 0021)
    account_ref: str | None = None
    answer_id: uuid.UUID | None = None
    audit_id: uuid.UUID | None = None  # its request's own audit row (a cached answer keeps the canonical id)
    facts: dict[str, Any] | None = None
    choices: list[str] | None = None
    agent_name: str | None = None


class TurnContext(msgspec.Struct, frozen=True, kw_only=True):
    """What an assistant turn took its question to be: the next follow-up's context (column `context`)."""

    intent: Intent | None
    subjects: list[str]
    locale: Locale
    question: str
    unanswered: bool  # a polite refusal
    said: list[AnyClaim] = msgspec.field(default_factory=list)  # what the conversation said about one statement
    said_about: str | None = None  # that statement (app/domain/conversation.py `statement_key`)


_CONVERSATION = (
    "SELECT c.id, c.tenant_id, c.customer_ref, c.locale, c.status, c.handover_reason, c.waiting_since,"
    " c.agent_id, a.display_name AS agent_name, c.last_seq, c.created_at, c.updated_at,"
    " coalesce(c.status = 'agent' AND c.agent_writing_until > now(), false) AS agent_writing"
    " FROM conversations c LEFT JOIN agents a ON a.id = c.agent_id"
)


async def start(
    conn: AsyncConnection, tenant_id: int, conversation_id: uuid.UUID, customer_ref: str, locale: Locale
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
    tenant_id: int,
    conversation_id: uuid.UUID,
    role: Role,
    message_text: str,
    *,
    locale: str | None = None,
    account_ref: str | None = None,
    answer_id: uuid.UUID | None = None,
    audit_id: uuid.UUID | None = None,
    facts: msgspec.Struct | None = None,
    context: TurnContext | None = None,
    choices: list[str] | None = None,
    agent_id: int | None = None,
) -> int:
    """Adds a message to the tenant's conversation; its number. One statement: the counter and the
    row move together, so two writers (the customer and the agent) never get the same number."""
    row = (
        await conn.execute(
            text(
                "WITH n AS (UPDATE conversations SET last_seq = last_seq + 1, updated_at = now(),"
                # the agent's message is what they were writing: the customer's "is writing…" ends
                " agent_writing_until = CASE WHEN :role = 'agent' THEN NULL ELSE agent_writing_until END"
                " WHERE id = :id AND tenant_id = :t RETURNING last_seq)"
                " INSERT INTO conversation_messages (conversation_id, seq, role, text, locale, account_ref,"
                " answer_id, audit_id, facts, context, choices, agent_id)"
                " SELECT :id, n.last_seq, :role, :text, :locale, :account, :answer, :audit,"
                " CAST(:facts AS jsonb), CAST(:context AS jsonb), CAST(:choices AS jsonb), :agent FROM n"
                " RETURNING seq"
            ),
            {
                "id": conversation_id,
                "t": tenant_id,
                "role": role,
                "text": message_text,
                "locale": locale,
                "account": account_ref,
                "answer": answer_id,
                "audit": audit_id,
                "facts": _json(facts),
                "context": _json(context),
                "choices": _json(choices),
                "agent": agent_id,
            },
        )
    ).first()
    if row is None:
        raise NotFound(f"conversation {conversation_id} not found")
    seq: int = row.seq
    return seq


def _json(value: object) -> str | None:
    return None if value is None else msgspec.json.encode(value).decode()


# A message of the tenant's conversation: the join on the conversation holds every read to the tenant.
_MESSAGES = (
    "SELECT m.seq, m.role, m.text, m.created_at, m.locale, m.account_ref, m.answer_id, m.audit_id, m.facts,"
    " m.choices, a.display_name AS agent_name"
    " FROM conversation_messages m JOIN conversations c ON c.id = m.conversation_id AND c.tenant_id = :t"
    " LEFT JOIN agents a ON a.id = m.agent_id"
)


async def messages(
    conn: AsyncConnection, tenant_id: int, conversation_id: uuid.UUID, after: int = 0, limit: int | None = None
) -> list[Message]:
    """The messages after number `after` (the first `limit` of them), in order."""
    rows = (
        await conn.execute(
            text(f"{_MESSAGES} WHERE m.conversation_id = :id AND m.seq > :after ORDER BY m.seq LIMIT :limit"),
            {"t": tenant_id, "id": conversation_id, "after": after, "limit": limit},
        )
    ).mappings()
    return [Message(**row) for row in rows]


async def latest(
    conn: AsyncConnection, tenant_id: int, conversation_id: uuid.UUID, limit: int, before: int | None = None
) -> list[Message]:
    """The last `limit` messages before number `before` (the conversation's last, without it), in order:
    a page of the transcript, however long the conversation is."""
    rows = (
        await conn.execute(
            text(
                f"SELECT * FROM ({_MESSAGES} WHERE m.conversation_id = :id AND (m.seq < :before OR :before IS NULL)"
                " ORDER BY m.seq DESC LIMIT :limit) page ORDER BY seq"
            ),
            {"t": tenant_id, "id": conversation_id, "before": before, "limit": limit},
        )
    ).mappings()
    return [Message(**row) for row in rows]


async def pace(conn: AsyncConnection, tenant_id: int, conversation_id: uuid.UUID) -> Pace:
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
                " FROM conversation_messages m JOIN conversations c ON c.id = m.conversation_id AND c.tenant_id = :t,"
                " (SELECT coalesce(max(seq), 0) AS replied FROM conversation_messages"
                "  WHERE conversation_id = :id AND role <> 'customer') r"
                " WHERE m.conversation_id = :id AND m.role = 'customer'"
            ),
            {"t": tenant_id, "id": conversation_id, "window": WINDOW_S},
        )
    ).one()
    return Pace(**row._mapping)


async def last_context(conn: AsyncConnection, tenant_id: int, conversation_id: uuid.UUID) -> TurnContext | None:
    """What the latest assistant turn took its question to be: the next follow-up's context."""
    row = (
        await conn.execute(
            text(
                "SELECT m.context FROM conversation_messages m"
                " JOIN conversations c ON c.id = m.conversation_id AND c.tenant_id = :t"
                " WHERE m.conversation_id = :id AND m.role = 'assistant' AND m.context IS NOT NULL"
                " ORDER BY m.seq DESC LIMIT 1"
            ),
            {"t": tenant_id, "id": conversation_id},
        )
    ).first()
    return None if row is None else msgspec.convert(row.context, TurnContext)


async def tenants(conn: AsyncConnection) -> list[int]:
    """The tenants that have conversations: the retention purges each in turn."""
    return list((await conn.execute(text("SELECT DISTINCT tenant_id FROM conversations ORDER BY 1"))).scalars())


async def purge(conn: AsyncConnection, tenant_id: int, older_than: timedelta) -> int:
    """Deletes the tenant's conversations (and their messages) with no message for `older_than`; how
    many. The answers' audit rows stay: they have their own life."""
    result = await conn.execute(
        text("DELETE FROM conversations WHERE tenant_id = :t AND updated_at < now() - CAST(:age AS interval)"),
        {"t": tenant_id, "age": older_than},
    )
    return result.rowcount
