"""The audit trail: every answered request leaves one row."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

# Text SQL with JSON passed as a string: the answer is already encoded once for the response.
_INSERT = text("""
INSERT INTO answers (id, tenant_id, account_id, statement_id, channel, question, locale, answer, source, timings)
VALUES (:id, :tenant_id, :account_id, :statement_id, :channel, :question, :locale,
        CAST(:answer AS jsonb), :source, CAST(:timings AS jsonb))
""")


async def record_answer(
    conn: AsyncConnection,
    *,
    answer_id: uuid.UUID,
    tenant_id: int,
    account_id: int,
    statement_id: int,
    channel: str,
    question: str,
    locale: str,
    answer_json: str,
    source: str,
    timings_json: str,
) -> None:
    await conn.execute(
        _INSERT,
        {
            "id": answer_id,
            "tenant_id": tenant_id,
            "account_id": account_id,
            "statement_id": statement_id,
            "channel": channel,
            "question": question,
            "locale": locale,
            "answer": answer_json,
            "source": source,
            "timings": timings_json,
        },
    )
