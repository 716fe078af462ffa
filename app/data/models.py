"""The schema. Migrations in migrations/ create it; a test proves both agree.

Every row that belongs to a customer carries tenant_id, and child rows reference their parent by
(tenant_id, id), so the database itself refuses a row that crosses tenants.
"""

from __future__ import annotations

import uuid
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Date,
    DateTime,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Identity,
    Index,
    MetaData,
    Numeric,
    String,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, UUID
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.sql.elements import conv

from app.domain.vocabulary import CHANNELS, LOCALES, PRIORITY_CLASSES, SOURCES, TRANSACTION_KINDS

Money = Numeric(14, 2)

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


def _id() -> Mapped[int]:
    return mapped_column(BigInteger, Identity(), primary_key=True)


def _created_at() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), server_default=func.now())


class Tenant(Base):
    __tablename__ = "tenants"
    __table_args__ = (
        CheckConstraint(_in("priority_class", PRIORITY_CLASSES), name="priority_class"),
        CheckConstraint("weight > 0", name="weight"),
        CheckConstraint("max_concurrency > 0", name="max_concurrency"),
        CheckConstraint("rate_limit_per_s > 0", name="rate_limit"),
    )

    id: Mapped[int] = _id()
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
    created_at: Mapped[datetime] = _created_at()


class ApiKey(Base):
    """Only a SHA-256 digest is kept: keys are 256-bit random, so a slow KDF would add nothing."""

    __tablename__ = "api_keys"

    id: Mapped[int] = _id()
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    prefix: Mapped[str] = mapped_column(String(16))  # shown to operators to tell keys apart
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    label: Mapped[str] = mapped_column(String(100), server_default="")
    created_at: Mapped[datetime] = _created_at()
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Customer(Base):
    __tablename__ = "customers"
    __table_args__ = (
        UniqueConstraint("tenant_id", "ref"),
        UniqueConstraint("tenant_id", "id"),
        CheckConstraint(_in("locale", LOCALES), name="locale"),
    )

    id: Mapped[int] = _id()
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    ref: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(200))
    locale: Mapped[str] = mapped_column(String(8))
    created_at: Mapped[datetime] = _created_at()


class Account(Base):
    __tablename__ = "accounts"
    __table_args__ = (
        UniqueConstraint("tenant_id", "ref"),
        UniqueConstraint("tenant_id", "id"),
        ForeignKeyConstraint(["tenant_id", "customer_id"], ["customers.tenant_id", "customers.id"], ondelete="CASCADE"),
        Index(None, "tenant_id", "customer_id"),
    )

    id: Mapped[int] = _id()
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    customer_id: Mapped[int] = mapped_column(BigInteger)
    ref: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(32))
    currency: Mapped[str] = mapped_column(String(3))
    masked_number: Mapped[str] = mapped_column(String(32))
    opening_balance: Mapped[Decimal] = mapped_column(Money)
    created_at: Mapped[datetime] = _created_at()


class Statement(Base):
    __tablename__ = "statements"
    __table_args__ = (
        UniqueConstraint("account_id", "period_end"),
        UniqueConstraint("tenant_id", "id"),
        ForeignKeyConstraint(["tenant_id", "account_id"], ["accounts.tenant_id", "accounts.id"], ondelete="CASCADE"),
        CheckConstraint("period_start <= period_end", name="period"),
        CheckConstraint("due_date >= period_end", name="due_date"),
        CheckConstraint("minimum_due >= 0", name="minimum_due"),
    )

    id: Mapped[int] = _id()
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    account_id: Mapped[int] = mapped_column(BigInteger)
    period_start: Mapped[date] = mapped_column(Date)
    period_end: Mapped[date] = mapped_column(Date)
    due_date: Mapped[date] = mapped_column(Date)
    minimum_due: Mapped[Decimal] = mapped_column(Money)
    # Bumped by triggers (migration 0004) whenever anything its answers depend on changes.
    data_version: Mapped[int] = mapped_column(BigInteger, server_default=text("1"))


class Transaction(Base):
    __tablename__ = "transactions"
    __table_args__ = (
        UniqueConstraint("account_id", "ref"),
        ForeignKeyConstraint(["tenant_id", "account_id"], ["accounts.tenant_id", "accounts.id"], ondelete="CASCADE"),
        CheckConstraint(_in("kind", TRANSACTION_KINDS), name="kind"),
        CheckConstraint("kind = 'adjustment' OR amount > 0", name="amount_sign"),
        Index(None, "account_id", "posted_on"),
    )

    id: Mapped[int] = _id()
    tenant_id: Mapped[int] = mapped_column(BigInteger)  # the account's tenant (its foreign key says so)
    account_id: Mapped[int] = mapped_column(BigInteger)
    ref: Mapped[str] = mapped_column(String(64))
    posted_on: Mapped[date] = mapped_column(Date)
    kind: Mapped[str] = mapped_column(String(16))
    amount: Mapped[Decimal] = mapped_column(Money)
    merchant: Mapped[str | None] = mapped_column(String(200))
    category: Mapped[str | None] = mapped_column(String(64))
    description: Mapped[str | None] = mapped_column(String(500))


class StatementSummary(Base):
    """What an answer reads of a statement instead of its lines, kept by triggers (migration 0011):
    the signed net, totals by kind and label, and the lines an answer may name."""

    __tablename__ = "statement_summaries"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "statement_id"], ["statements.tenant_id", "statements.id"], ondelete="CASCADE"
        ),
    )

    statement_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    tenant_id: Mapped[int] = mapped_column(BigInteger)
    net: Mapped[Decimal] = mapped_column(Numeric(18, 2))  # a sum of many numeric(14, 2) lines
    totals: Mapped[list[dict[str, Any]]] = mapped_column(JSONB)
    lines: Mapped[list[dict[str, Any]]] = mapped_column(JSONB)


class Answer(Base):
    """The audit trail: one row for every answered request."""

    __tablename__ = "answers"
    __table_args__ = (
        ForeignKeyConstraint(["tenant_id", "account_id"], ["accounts.tenant_id", "accounts.id"]),
        ForeignKeyConstraint(["tenant_id", "statement_id"], ["statements.tenant_id", "statements.id"]),
        CheckConstraint(_in("channel", CHANNELS), name="channel"),
        CheckConstraint(_in("source", SOURCES), name="source"),
        Index(None, "tenant_id", "created_at"),
        Index(None, "account_id", "created_at"),  # the console's answers for an account
    )

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    account_id: Mapped[int] = mapped_column(BigInteger)
    statement_id: Mapped[int] = mapped_column(BigInteger)
    channel: Mapped[str] = mapped_column(String(16))
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
    created_at: Mapped[datetime] = _created_at()


class CachedAnswer(Base):
    """Validated canonical answers, by exact key: a hit can never describe other data, template or engine."""

    __tablename__ = "answer_cache"
    __table_args__ = (
        ForeignKeyConstraint(
            ["tenant_id", "statement_id"], ["statements.tenant_id", "statements.id"], ondelete="CASCADE"
        ),
        UniqueConstraint(
            "tenant_id",
            "statement_id",
            "data_version",
            "intent",
            "locale",
            "prompt_version",
            "engine_profile",
            "as_of",
            name=conv("uq_answer_cache_key"),
        ),
    )

    id: Mapped[int] = _id()
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    statement_id: Mapped[int] = mapped_column(BigInteger)
    data_version: Mapped[int] = mapped_column(BigInteger)
    intent: Mapped[str] = mapped_column(String(16))
    locale: Mapped[str] = mapped_column(String(8))
    prompt_version: Mapped[str] = mapped_column(String(16))
    engine_profile: Mapped[str] = mapped_column(String(200))  # model, quantization, engine build
    as_of: Mapped[date] = mapped_column(Date)
    answer: Mapped[dict[str, Any]] = mapped_column(JSONB)
    # The statement's merchant and fee labels as app/domain/intents.py `label_keys` gives them.
    labels: Mapped[list[str]] = mapped_column(ARRAY(Text))
    created_at: Mapped[datetime] = _created_at()


class Job(Base):
    """A batch of explanations requested at once; its items are answered at batch priority."""

    __tablename__ = "jobs"
    __table_args__ = (UniqueConstraint("tenant_id", "idempotency_key"),)

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    idempotency_key: Mapped[str | None] = mapped_column(String(200))
    total: Mapped[int]
    created_at: Mapped[datetime] = _created_at()


class JobItem(Base):
    __tablename__ = "job_items"
    __table_args__ = (
        CheckConstraint(_in("status", ("pending", "done", "error")), name="status"),
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


class Agent(Base):
    """A bank employee who uses the console; passwords are kept as scrypt hashes (app/data/agents.py)."""

    __tablename__ = "agents"
    __table_args__ = (UniqueConstraint("tenant_id", "username"),)

    id: Mapped[int] = _id()
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    username: Mapped[str] = mapped_column(String(64))
    display_name: Mapped[str] = mapped_column(String(200))
    password_hash: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = _created_at()
    disabled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class SigninThrottle(Base):
    """Console sign-in throttling, shared by every replica (app/data/signin.py). 'account:<digest>'
    rows count an account's wrong passwords in a row and hold its back-off window (until); 'client:<address>'
    rows count a client's failed sign-ins in the fixed window that ends at until."""

    __tablename__ = "signin_throttle"

    key: Mapped[str] = mapped_column(String(100), primary_key=True)
    failures: Mapped[int] = mapped_column(server_default=text("0"))
    until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class AdmissionBucket(Base):
    """A tenant's admission token bucket, shared by every replica (app/data/admission.py). UNLOGGED:
    live state that a crash may lose (migration 0009 says why)."""

    __tablename__ = "admission_bucket"
    __table_args__ = {"prefixes": ["UNLOGGED"]}  # noqa: RUF012

    tenant: Mapped[str] = mapped_column(Text, primary_key=True)
    tokens: Mapped[float] = mapped_column(Float)
    updated: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class AdmissionLease(Base):
    """One request admitted to the engine, held by a replica until it finishes or the lease expires
    (a replica renews its leases while it lives)."""

    __tablename__ = "admission_lease"
    __table_args__ = (
        Index("ix_admission_lease_tenant", "tenant"),
        Index("ix_admission_lease_replica", "replica"),
        {"prefixes": ["UNLOGGED"]},
    )

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    tenant: Mapped[str] = mapped_column(Text)
    replica: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class AgentSession(Base):
    """A console login: the cookie holds a random token, the table only its digest (revocable)."""

    __tablename__ = "agent_sessions"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    agent_id: Mapped[int] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"), index=True)
    csrf_token: Mapped[str] = mapped_column(String(64))  # the forms' synchronizer token
    created_at: Mapped[datetime] = _created_at()
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
