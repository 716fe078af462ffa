"""Who may use the service, and how much: console agents and their sessions, sign-in throttling, the
admission ledger every replica shares."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    DateTime,
    Float,
    ForeignKey,
    Index,
    String,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.data.models.base import Base, created_at_column, id_column


class Agent(Base):
    """A bank employee who uses the console; passwords are kept as scrypt hashes (app/data/agents.py)."""

    __tablename__ = "agents"
    __table_args__ = (UniqueConstraint("tenant_id", "username"),)

    id: Mapped[int] = id_column()
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    username: Mapped[str] = mapped_column(String(64))
    display_name: Mapped[str] = mapped_column(String(200))
    password_hash: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = created_at_column()
    disabled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class AgentSession(Base):
    """A console login: the cookie holds a random token, the table only its digest (revocable)."""

    __tablename__ = "agent_sessions"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    agent_id: Mapped[int] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"), index=True)
    csrf_token: Mapped[str] = mapped_column(String(64))  # the forms' synchronizer token
    created_at: Mapped[datetime] = created_at_column()
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


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


class AdmissionReplica(Base):
    """A process that admits through the ledger, alive while it keeps beating (migration 0018): only
    the leases of live replicas count."""

    __tablename__ = "admission_replica"
    __table_args__ = {"prefixes": ["UNLOGGED"]}  # noqa: RUF012

    replica: Mapped[str] = mapped_column(Text, primary_key=True)
    alive_until: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class AdmissionLease(Base):
    """One request admitted to the engine, held by a replica until it finishes or the lease expires
    (a replica renews its leases while it lives), and counted only while its replica beats."""

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
