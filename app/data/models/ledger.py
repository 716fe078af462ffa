"""The banks' data: customers, accounts, statements, their lines and the statements' summaries.

Every row that belongs to a customer carries tenant_id, and child rows reference their parent by
(tenant_id, id), so the database itself refuses a row that crosses tenants."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Date,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Numeric,
    String,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import BYTEA, JSONB
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.types import UserDefinedType

from app.data.models.base import Base, Money, created_at_column, id_column, in_
from app.domain.vocabulary import TRANSACTION_KINDS


class Customer(Base):
    __tablename__ = "customers"
    __table_args__ = (
        UniqueConstraint("tenant_id", "ref"),
        UniqueConstraint("tenant_id", "id"),
    )

    id: Mapped[int] = id_column()
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    ref: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(200))
    locale: Mapped[str] = mapped_column(String(8))
    created_at: Mapped[datetime] = created_at_column()


class Account(Base):
    __tablename__ = "accounts"
    __table_args__ = (
        UniqueConstraint("tenant_id", "ref"),
        UniqueConstraint("tenant_id", "id"),
        ForeignKeyConstraint(["tenant_id", "customer_id"], ["customers.tenant_id", "customers.id"], ondelete="CASCADE"),
        Index(None, "tenant_id", "customer_id"),
    )

    id: Mapped[int] = id_column()
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    customer_id: Mapped[int] = mapped_column(BigInteger)
    ref: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(32))
    currency: Mapped[str] = mapped_column(String(3))
    masked_number: Mapped[str] = mapped_column(String(32))
    opening_balance: Mapped[Decimal] = mapped_column(Money)
    created_at: Mapped[datetime] = created_at_column()


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

    id: Mapped[int] = id_column()
    tenant_id: Mapped[int] = mapped_column(BigInteger)  # the account's tenant (the key above; migration 0028)
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
        # Its account (tenant_id, account_id) is checked, locked and cascaded by statement-level
        # triggers (migration 0024), not a foreign key: one pass per statement instead of a
        # trigger call per line of a bulk load.
        CheckConstraint(in_("kind", TRANSACTION_KINDS), name="kind"),
        CheckConstraint("kind = 'adjustment' OR amount > 0", name="amount_sign"),
        Index(None, "account_id", "posted_on"),
        # A named merchant's or fee's lines, without reading the period's others (migration 0029).
        Index(
            "ix_transactions_account_id_label",
            "account_id",
            text("line_label(kind, merchant, description)"),
            "posted_on",
            postgresql_where=text("kind <> 'payment'"),
        ),
    )

    id: Mapped[int] = id_column()
    tenant_id: Mapped[int] = mapped_column(BigInteger)  # the account's tenant (migration 0024 checks it)
    account_id: Mapped[int] = mapped_column(BigInteger)
    ref: Mapped[str] = mapped_column(String(64))
    posted_on: Mapped[date] = mapped_column(Date)
    kind: Mapped[str] = mapped_column(String(16))
    amount: Mapped[Decimal] = mapped_column(Money)
    merchant: Mapped[str | None] = mapped_column(String(200))
    category: Mapped[str | None] = mapped_column(String(64))
    description: Mapped[str | None] = mapped_column(String(500))


class Rows(UserDefinedType[list[Any]]):
    """An array of one of migration 0025's composite types (read as json: app/data/history.py)."""

    cache_ok = True

    def __init__(self, composite: str) -> None:
        self.composite = composite

    def get_col_spec(self, **kw: Any) -> str:
        return f"{self.composite}[]"


class StatementSummary(Base):
    """What an answer reads of a statement instead of its lines, kept by triggers (migrations 0011, 0012):
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
    # Arrays of rows, not json: a bulk load builds a million of these values (migration 0025).
    totals: Mapped[list[Any]] = mapped_column(Rows("summary_total"))
    lines: Mapped[list[Any]] = mapped_column(Rows("summary_line"))


class LedgerVersion(Base):
    """A tenant's ledger version: bumped by statement-level triggers whenever any of its customers,
    accounts, statements or transactions is written, by any writer (migration 0012)."""

    __tablename__ = "ledger_versions"

    tenant_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True)
    version: Mapped[int] = mapped_column(BigInteger)


class BulkLoad(Base):
    """A tenant's last CSV load: the files' digest, its row counts, and the ledger version it left.
    Byte-identical files while the version has not moved have nothing to write (app/data/csv_import.py)."""

    __tablename__ = "bulk_loads"

    tenant_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True)
    digest: Mapped[bytes] = mapped_column(BYTEA)
    counts: Mapped[dict[str, int]] = mapped_column(JSONB)
    ledger_version: Mapped[int] = mapped_column(BigInteger)
    loaded_at: Mapped[datetime] = created_at_column()
    # The header's and each line's digest of its transactions file (migration 0020, app/data/csv_lines.py).
    line_digests: Mapped[bytes | None] = mapped_column(BYTEA)
