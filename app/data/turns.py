"""A conversation's turn and the answer's audit row: whether the turn that links them was written (a
write whose acknowledgement was lost may have been), and, when it could not be, the audit row saying
so, so that an answer that belongs to no conversation is never a silent gap."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

# The turn's answer among the conversation's messages after `seen` (its last message when the question
# came): a cached answer keeps its original id, so an earlier turn may hold the same one.
_THIS_TURN = "m.conversation_id = :cid AND m.answer_id = :answer AND m.role = 'assistant' AND m.seq > :seen"


async def recorded(
    conn: AsyncConnection, conversation_id: uuid.UUID, answer_id: uuid.UUID, seen: int
) -> dict[str, Any] | None:
    """The turn of this answer, if it was written: its two message numbers and the conversation's status.
    A turn is written in one transaction, so the customer's question is the message just before."""
    row = (
        await conn.execute(
            text(
                "SELECT m.seq - 1 AS customer_seq, m.seq AS assistant_seq, c.status"
                f" FROM conversation_messages m JOIN conversations c ON c.id = m.conversation_id WHERE {_THIS_TURN}"
            ),
            {"cid": conversation_id, "answer": answer_id, "seen": seen},
        )
    ).first()
    return None if row is None else dict(row._mapping)


async def note_unrecorded(
    conn: AsyncConnection, audit_id: uuid.UUID, conversation_id: uuid.UUID, answer_id: uuid.UUID, seen: int
) -> bool:
    """The request's audit row says its turn was not recorded in that conversation (`answer.turn`),
    unless it was after all; whether it now says so."""
    row = (
        await conn.execute(
            text(
                "UPDATE answers SET answer = answer || jsonb_build_object('turn',"
                " jsonb_build_object('conversation_id', CAST(:cid_text AS text), 'recorded', false))"
                f" WHERE id = :audit AND NOT EXISTS (SELECT 1 FROM conversation_messages m WHERE {_THIS_TURN})"
                " RETURNING id"
            ),
            {
                "audit": audit_id,
                "cid": conversation_id,
                "cid_text": str(conversation_id),
                "answer": answer_id,
                "seen": seen,
            },
        )
    ).first()
    return row is not None
