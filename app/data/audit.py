"""The audit trail: every answered request leaves one row."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

# Text SQL with JSON passed as a string: the answer is already encoded once for the response.
_INSERT = text("""
INSERT INTO answers (id, tenant_id, account_id, statement_id, channel, question, locale, answer, source,
                     intent, prompt_version, model, usage, fallback_reason, timings, stage_starts)
VALUES (:id, :tenant_id, :account_id, :statement_id, :channel, :question, :locale, CAST(:answer AS jsonb),
        :source, :intent, :prompt_version, :model, CAST(:usage AS jsonb), :fallback_reason, CAST(:timings AS jsonb),
        CAST(:stage_starts AS jsonb))
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
    intent: str,
    prompt_version: str,
    model: str | None,
    usage_json: str | None,
    fallback_reason: str | None,
    timings_json: str,
    stage_starts_json: str | None = None,
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
            "intent": intent,
            "prompt_version": prompt_version,
            "model": model,
            "usage": usage_json,
            "fallback_reason": fallback_reason,
            "timings": timings_json,
            "stage_starts": stage_starts_json,
        },
    )
