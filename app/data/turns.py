"""A conversation's turn and the answer's audit row: whether the turn that links them was written (a
write whose acknowledgement was lost may have been), and, when it could not be, the audit row saying
so, so that an answer that belongs to no conversation is never a silent gap."""

from __future__ import annotations

import uuid

import msgspec
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.domain.vocabulary import ConversationStatus

# The turn's answer among the tenant's conversation's messages after `seen` (its last message when the
# question came): a cached answer keeps its original id, so an earlier turn may hold the same one.
_THIS_TURN = (
    "m.conversation_id = :cid AND m.answer_id = :answer AND m.role = 'assistant' AND m.seq > :seen"
    " AND EXISTS (SELECT 1 FROM conversations t WHERE t.id = m.conversation_id AND t.tenant_id = :t)"
)


class RecordedTurn(msgspec.Struct, frozen=True, kw_only=True):
    """A written turn: its two messages' numbers and the conversation's status after it."""

    customer_seq: int
    assistant_seq: int
    status: ConversationStatus


async def recorded(
    conn: AsyncConnection, tenant_id: int, conversation_id: uuid.UUID, answer_id: uuid.UUID, seen: int
) -> RecordedTurn | None:
    """The turn of this answer, if it was written. A turn is written in one transaction, so the
    customer's question is the message just before."""
    row = (
        await conn.execute(
            text(
                "SELECT m.seq - 1 AS customer_seq, m.seq AS assistant_seq, c.status"
                f" FROM conversation_messages m JOIN conversations c ON c.id = m.conversation_id WHERE {_THIS_TURN}"
            ),
            {"t": tenant_id, "cid": conversation_id, "answer": answer_id, "seen": seen},
        )
    ).first()
    return None if row is None else RecordedTurn(**row._mapping)


async def note_unrecorded(
    conn: AsyncConnection,
    tenant_id: int,
    audit_id: uuid.UUID,
    conversation_id: uuid.UUID,
    answer_id: uuid.UUID,
    seen: int,
) -> bool:
    """The request's audit row says its turn was not recorded in that conversation (`answer.turn`),
    unless it was after all; whether it now says so."""
    row = (
        await conn.execute(
            text(
                "UPDATE answers SET answer = answer || jsonb_build_object('turn',"
                " jsonb_build_object('conversation_id', CAST(:cid_text AS text), 'recorded', false))"
                " WHERE id = :audit AND tenant_id = :t"
                f" AND NOT EXISTS (SELECT 1 FROM conversation_messages m WHERE {_THIS_TURN})"
                " RETURNING id"
            ),
            {
                "t": tenant_id,
                "audit": audit_id,
                "cid": conversation_id,
                "cid_text": str(conversation_id),
                "answer": answer_id,
                "seen": seen,
            },
        )
    ).first()
    return row is not None
