"""The audit trail: every answered request leaves one row; the console reads them back. (A cache
hit's row is written by the statement that finds it: app/data/answer_cache.py.)"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import asyncpg
import msgspec
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.data.models import Account, Answer, Customer
from app.data.sql import Statement
from app.domain.vocabulary import Channel, Intent, Locale, Origin, Source


class AuditRow(msgspec.Struct, frozen=True, kw_only=True):
    """One answered request; JSON columns are passed as text (the answer is already encoded once
    for the response)."""

    id: uuid.UUID
    tenant_id: int
    account_id: int
    statement_id: int
    channel: Channel
    origin: Origin
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


# The columns of `answers`, written once: AuditRow's fields. Both inserts (an answer's row, a cache
# hit's) name each column's value, so none can land in another column.
AUDIT_COLUMNS: tuple[str, ...] = AuditRow.__struct_fields__


def insert_answer(values: Mapping[str, str]) -> str:
    """`INSERT INTO answers (...) SELECT ...` from each column's SQL expression, by column name."""
    if values.keys() != set(AUDIT_COLUMNS):
        wrong = sorted(values.keys() ^ set(AUDIT_COLUMNS))
        raise ValueError(f"an answers row needs exactly its columns; missing or unknown: {', '.join(wrong)}")
    return f"INSERT INTO answers ({', '.join(AUDIT_COLUMNS)})\nSELECT {', '.join(values[c] for c in AUDIT_COLUMNS)}"


def json_parameter(name: str) -> str:
    """A JSON column's value, passed as JSON text."""
    return f"CAST(CAST(:{name} AS text) AS jsonb)"


_JSON_COLUMNS = {"answer", "usage", "timings", "stage_starts"}
_INSERT = Statement(insert_answer({c: json_parameter(c) if c in _JSON_COLUMNS else f":{c}" for c in AUDIT_COLUMNS}))


async def record_answer(conn: asyncpg.Connection, row: AuditRow) -> None:
    """On an asyncpg connection (app/data/driver_pool.py): committed (synchronously, durable) when this returns."""
    await conn.execute(_INSERT.sql, *_INSERT.args(row))


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
    locale: str  # the answer's: the question's own language, or the customer's when it did not say
    customer_locale: str
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
                Customer.locale.label("customer_locale"),
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
            .join(Customer, (Customer.tenant_id == Account.tenant_id) & (Customer.id == Account.customer_id))
            .where(Answer.tenant_id == tenant_id, Answer.id == answer_id)
        )
    ).first()
    return AnswerRecord(**row._mapping) if row is not None else None
