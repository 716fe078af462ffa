"""The audit trail: every answered request leaves one row; the console reads them back."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import asyncpg
import msgspec
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.data.models import Account, Answer
from app.domain.vocabulary import Channel, Intent, Locale, Source

# The parameters in AuditRow's field order; JSON arrives as text.
_INSERT = """
INSERT INTO answers (id, tenant_id, account_id, statement_id, channel, question, locale, answer, source,
                     intent, prompt_version, model, usage, fallback_reason, timings, stage_starts)
VALUES ($1, $2, $3, $4, $5, $6, $7, CAST(CAST($8 AS text) AS jsonb), $9, $10, $11, $12,
        CAST(CAST($13 AS text) AS jsonb), $14, CAST(CAST($15 AS text) AS jsonb), CAST(CAST($16 AS text) AS jsonb))
"""


class AuditRow(msgspec.Struct, frozen=True, kw_only=True):
    """One answered request; JSON columns are passed as text (the answer is already encoded once
    for the response)."""

    id: uuid.UUID
    tenant_id: int
    account_id: int
    statement_id: int
    channel: Channel
    question: str
    locale: Locale
    answer: str
    source: Source
    intent: Intent
    prompt_version: str
    model: str | None
    usage: str | None
    fallback_reason: str | None  # str(Reason)
    timings: str
    stage_starts: str


async def record_answer(conn: asyncpg.Connection, row: AuditRow) -> None:
    """On an asyncpg connection (app/data/driver_pool.py): committed (synchronously, durable) when this returns."""
    await conn.execute(_INSERT, *msgspec.structs.astuple(row))


class AnswerBrief(msgspec.Struct, frozen=True, kw_only=True):
    id: uuid.UUID
    created_at: datetime
    channel: str
    question: str
    source: str
    intent: str


class AnswerRecord(msgspec.Struct, frozen=True, kw_only=True):
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
    return [AnswerBrief(**row._mapping) for row in rows]


async def find_answer(conn: AsyncConnection, tenant_id: int, answer_id: uuid.UUID) -> AnswerRecord | None:
    """The audit row; None for an unknown id, or another tenant's."""
    row = (
        await conn.execute(
            select(
                Answer.id,
                Answer.created_at,
                Account.ref.label("account_ref"),
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
    return AnswerRecord(**row._mapping) if row is not None else None
