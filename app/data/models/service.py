"""The service's own tables: tenants and their keys, the audit trail, the answer cache, batch jobs."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, UUID
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.sql.elements import conv

from app.data.models.base import Base, created_at_column, id_column, in_
from app.domain.vocabulary import CHANNELS, ORIGINS, PRIORITY_CLASSES, SOURCES


class Tenant(Base):
    __tablename__ = "tenants"
    __table_args__ = (
        CheckConstraint(in_("priority_class", PRIORITY_CLASSES), name="priority_class"),
        CheckConstraint("weight > 0", name="weight"),
        CheckConstraint("max_concurrency > 0", name="max_concurrency"),
        CheckConstraint("rate_limit_per_s > 0", name="rate_limit"),
    )

    id: Mapped[int] = id_column()
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    priority_class: Mapped[str] = mapped_column(String(16))
    # Admission (app/inference/scheduler.py): share within a priority level, requests in the engine at
    # once, and sustained requests per second (bursts up to the same number).
    weight: Mapped[int] = mapped_column(server_default=text("1"))
    max_concurrency: Mapped[int] = mapped_column(server_default=text("8"))
    rate_limit_per_s: Mapped[float] = mapped_column(Float, server_default=text("20"))
    # Brand, tone and what the assistant may never do (app.domain.policy.TenantPolicy); {} = defaults.
    policy: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default=text("'{}'::jsonb"))
    created_at: Mapped[datetime] = created_at_column()


class ApiKey(Base):
    """Only a SHA-256 digest is kept: keys are 256-bit random, so a slow KDF would add nothing."""

    __tablename__ = "api_keys"

    id: Mapped[int] = id_column()
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    prefix: Mapped[str] = mapped_column(String(16))  # shown to operators to tell keys apart
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    label: Mapped[str] = mapped_column(String(100), server_default="")
    created_at: Mapped[datetime] = created_at_column()
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Answer(Base):
    """The audit trail: one row for every answered request."""

    __tablename__ = "answers"
    __table_args__ = (
        ForeignKeyConstraint(["tenant_id", "account_id"], ["accounts.tenant_id", "accounts.id"]),
        ForeignKeyConstraint(["tenant_id", "statement_id"], ["statements.tenant_id", "statements.id"]),
        CheckConstraint(in_("channel", CHANNELS), name="channel"),
        CheckConstraint(in_("source", SOURCES), name="source"),
        CheckConstraint(in_("origin", ORIGINS), name="origin"),
        Index(None, "tenant_id", "created_at"),
        Index(None, "account_id", "created_at"),  # the console's answers for an account
    )

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    account_id: Mapped[int] = mapped_column(BigInteger)
    statement_id: Mapped[int] = mapped_column(BigInteger)
    channel: Mapped[str] = mapped_column(String(16))
    origin: Mapped[str] = mapped_column(String(8), server_default="request")  # who asked: traffic or the service
    question: Mapped[str] = mapped_column(Text)
    locale: Mapped[str] = mapped_column(String(8))
    answer: Mapped[dict[str, Any]] = mapped_column(JSONB)
    source: Mapped[str] = mapped_column(String(16))
    intent: Mapped[str] = mapped_column(String(16))
    prompt_version: Mapped[str] = mapped_column(String(16))
    model: Mapped[str | None] = mapped_column(String(200))  # set when the engine was asked
    usage: Mapped[dict[str, int] | None] = mapped_column(JSONB)
    fallback_reason: Mapped[str | None] = mapped_column(Text)  # why the model's answer was not served
    timings: Mapped[dict[str, float]] = mapped_column(JSONB)
    stage_starts: Mapped[dict[str, float] | None] = mapped_column(JSONB)  # ms after arrival: the waterfall
    created_at: Mapped[datetime] = created_at_column()


class CachedAnswer(Base):
    """Validated canonical answers, by exact key: a hit can never state other facts, or come from
    another template or engine. `data_version` is the statement's when stored (precompute's skip)."""

    __tablename__ = "answer_cache"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "statement_id"], ["statements.tenant_id", "statements.id"], ondelete="CASCADE"
        ),
        UniqueConstraint(
            "tenant_id",
            "statement_id",
            "facts_digest",
            "intent",
            "locale",
            "prompt_version",
            "engine_profile",
            name=conv("uq_answer_cache_key"),
        ),
    )

    id: Mapped[int] = id_column()
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    statement_id: Mapped[int] = mapped_column(BigInteger)
    data_version: Mapped[int] = mapped_column(BigInteger)
    intent: Mapped[str] = mapped_column(String(16))
    locale: Mapped[str] = mapped_column(String(8))
    prompt_version: Mapped[str] = mapped_column(String(16))
    engine_profile: Mapped[str] = mapped_column(String(200))  # model, quantization, engine build
    # What the answer states (app/domain/facts.py `facts_digest`): the same facts on another day hit.
    facts_digest: Mapped[str] = mapped_column(String(64))
    answer: Mapped[dict[str, Any]] = mapped_column(JSONB)
    created_at: Mapped[datetime] = created_at_column()


class Job(Base):
    """A batch of explanations requested at once; its items are answered at batch priority."""

    __tablename__ = "jobs"
    __table_args__ = (UniqueConstraint("tenant_id", "idempotency_key"),)

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    idempotency_key: Mapped[str | None] = mapped_column(String(200))
    total: Mapped[int]
    created_at: Mapped[datetime] = created_at_column()


class JobItem(Base):
    __tablename__ = "job_items"
    __table_args__ = (
        CheckConstraint(in_("status", ("pending", "done", "error")), name="status"),
        Index("ix_job_items_pending", "claimed_until", postgresql_where=text("status = 'pending'")),
    )

    job_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    idx: Mapped[int] = mapped_column(primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    request: Mapped[dict[str, Any]] = mapped_column(JSONB)
    status: Mapped[str] = mapped_column(String(16), server_default="pending")
    result: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    error: Mapped[str | None] = mapped_column(Text)
    # A worker's lease: an item whose worker died is taken again once this has passed.
    claimed_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class CacheFillLeader(Base):
    """The replica that fills the answer cache on schedule: one row, a lease (migration 0015)."""

    __tablename__ = "cache_fill_leader"
    __table_args__ = (CheckConstraint("id = 1", name="one"),)

    id: Mapped[int] = mapped_column(SmallInteger, primary_key=True, autoincrement=False)
    holder: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
