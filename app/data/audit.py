"""The audit trail: every answered request leaves one row; the console reads them back."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import msgspec
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.data.models import Account, Answer

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
    stage_starts_json: str,
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


class AnswerBrief(msgspec.Struct, frozen=True):
    id: uuid.UUID
    created_at: datetime
    channel: str
    question: str
    source: str
    intent: str


class AnswerRecord(msgspec.Struct, frozen=True):
    """One audit row as the console shows it."""

    id: uuid.UUID
    created_at: datetime
    account_ref: str
    channel: str
    question: str
    locale: str
    answer: dict[str, Any]
    source: str
    intent: str
    prompt_version: str
    model: str | None
    usage: dict[str, int] | None
    fallback_reason: str | None
    timings: dict[str, float]
    stage_starts: dict[str, float] | None


async def recent_answers(conn: AsyncConnection, tenant_id: int, account_id: int, limit: int = 20) -> list[AnswerBrief]:
    rows = await conn.execute(
        select(Answer.id, Answer.created_at, Answer.channel, Answer.question, Answer.source, Answer.intent)
        .where(Answer.tenant_id == tenant_id, Answer.account_id == account_id)
        .order_by(Answer.created_at.desc())
        .limit(limit)
    )
    return [AnswerBrief(*row) for row in rows]


async def find_answer(conn: AsyncConnection, tenant_id: int, answer_id: uuid.UUID) -> AnswerRecord | None:
    """The audit row; None for an unknown id, or another tenant's."""
    row = (
        await conn.execute(
            select(
                Answer.id,
                Answer.created_at,
                Account.ref,
                Answer.channel,
                Answer.question,
                Answer.locale,
                Answer.answer,
                Answer.source,
                Answer.intent,
                Answer.prompt_version,
                Answer.model,
                Answer.usage,
                Answer.fallback_reason,
                Answer.timings,
                Answer.stage_starts,
            )
            .join(Account, (Account.tenant_id == Answer.tenant_id) & (Account.id == Answer.account_id))
            .where(Answer.tenant_id == tenant_id, Answer.id == answer_id)
        )
    ).first()
    return AnswerRecord(*row) if row is not None else None
