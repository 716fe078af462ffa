"""Imports customers, accounts, statements and transactions from the JSON exchange format.

A file is checked whole before anything is written and written in one transaction, so a bad file
changes nothing. Rows are matched by ref (statements by account and period end): importing the same
file again changes nothing, and a corrected row is updated in place.

What a file may hold, beyond its shape: dates from 1970-01-01 to 2099-12-31 (Postgres would keep
0001-01-01 or 9999-12-31 as -infinity/infinity, which no query can read back as a date); refs and
amounts without surrounding whitespace; no control character (NUL, line breaks, tabs, ...) in any
text. Every rejection names the field's JSON path.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from itertools import pairwise
from typing import Annotated, Any, cast

import msgspec
from sqlalchemy import Boolean, Table, literal_column, select, text, tuple_
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from app.data.models import Account, Customer, Statement, Transaction
from app.data.tenants import tenant_id as find_tenant
from app.domain.vocabulary import Locale, TransactionKind
from app.errors import ImportRejected

# Anchored with \A and \Z: `$` also matches before a final newline.
_NO_CONTROL = r"\A[^\x00-\x1f\x7f-\x9f]*\Z"  # Postgres cannot hold NUL; no text here spans lines
_EDGE = r"[^\s\x00-\x1f\x7f-\x9f]"  # a ref's first and last character: not blank, not a control
Ref = Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=rf"\A{_EDGE}([^\x00-\x1f\x7f-\x9f]*{_EDGE})?\Z")]
Amount = Annotated[str, msgspec.Meta(pattern=r"\A-?[0-9]{1,12}(\.[0-9]{1,2})?\Z")]
Text200 = Annotated[str, msgspec.Meta(max_length=200, pattern=_NO_CONTROL)]

# The dates a file may hold (see the module's docstring).
FIRST_DATE, LAST_DATE = date(1970, 1, 1), date(2099, 12, 31)


class TransactionIn(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    ref: Ref
    posted_on: date
    kind: TransactionKind
    amount: Amount
    merchant: Text200 | None = None
    category: Annotated[str, msgspec.Meta(max_length=64, pattern=_NO_CONTROL)] | None = None
    description: Annotated[str, msgspec.Meta(max_length=500, pattern=_NO_CONTROL)] | None = None


class StatementIn(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    period_start: date
    period_end: date
    due_date: date
    minimum_due: Amount


class AccountIn(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    ref: Ref
    kind: Annotated[str, msgspec.Meta(min_length=1, max_length=32, pattern=_NO_CONTROL)]
    currency: Annotated[str, msgspec.Meta(pattern=r"\A[A-Z]{3}\Z")]
    masked_number: Annotated[str, msgspec.Meta(max_length=32, pattern=_NO_CONTROL)]
    opening_balance: Amount
    statements: list[StatementIn] = []
    transactions: list[TransactionIn] = []


class CustomerIn(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    ref: Ref
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=_NO_CONTROL)]
    locale: Locale
    accounts: list[AccountIn] = []


class ImportFile(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    tenant: Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=_NO_CONTROL)]
    customers: list[CustomerIn]


@dataclass(kw_only=True)
class Counts:
    created: int = 0
    updated: int = 0
    unchanged: int = 0


@dataclass
class ImportReport:
    tenant: str
    tables: dict[str, Counts] = field(default_factory=dict)

    def summary(self) -> str:
        parts = [
            f"{name}: {c.created} created, {c.updated} updated, {c.unchanged} unchanged"
            for name, c in self.tables.items()
        ]
        return f"tenant {self.tenant}: " + "; ".join(parts)


def parse(data: bytes | str) -> ImportFile:
    """Decode and check a whole file; raises ImportRejected naming the first bad field."""
    try:
        doc = msgspec.json.decode(data, type=ImportFile)
    except msgspec.ValidationError as exc:
        raise ImportRejected(str(exc)) from None
    except msgspec.DecodeError as exc:
        raise ImportRejected(f"not valid JSON: {exc}") from None
    _check(doc)
    return doc


def _check(doc: ImportFile) -> None:
    customer_refs: set[str] = set()
    account_refs: set[str] = set()
    for ci, customer in enumerate(doc.customers):
        at = f"$.customers[{ci}]"
        if customer.ref in customer_refs:
            raise ImportRejected(f"duplicate customer ref {customer.ref!r} - at `{at}.ref`")
        customer_refs.add(customer.ref)
        for ai, account in enumerate(customer.accounts):
            at = f"$.customers[{ci}].accounts[{ai}]"
            if account.ref in account_refs:
                raise ImportRejected(f"duplicate account ref {account.ref!r} - at `{at}.ref`")
            account_refs.add(account.ref)
            _check_statements(account.statements, at)
            _check_transactions(account.transactions, at)


def _check_date(value: date, at: str) -> None:
    if not FIRST_DATE <= value <= LAST_DATE:
        raise ImportRejected(f"date {value} is outside {FIRST_DATE}..{LAST_DATE} - at `{at}`")


def _check_statements(statements: Sequence[StatementIn], at: str) -> None:
    for si, st in enumerate(statements):
        for name in ("period_start", "period_end", "due_date"):
            _check_date(getattr(st, name), f"{at}.statements[{si}].{name}")
        if st.period_start > st.period_end:
            raise ImportRejected(f"period_start is after period_end - at `{at}.statements[{si}].period_start`")
        if st.due_date < st.period_end:
            raise ImportRejected(f"due_date is before period_end - at `{at}.statements[{si}].due_date`")
        if Decimal(st.minimum_due) < 0:
            raise ImportRejected(f"minimum_due must not be negative - at `{at}.statements[{si}].minimum_due`")
    ordered = sorted(enumerate(statements), key=lambda pair: pair[1].period_start)
    for (_, before), (si, after) in pairwise(ordered):
        if after.period_start <= before.period_end:
            raise ImportRejected(
                f"statement periods overlap ({before.period_start}..{before.period_end} and "
                f"{after.period_start}..{after.period_end}) - at `{at}.statements[{si}].period_start`"
            )


def _check_transactions(transactions: Sequence[TransactionIn], at: str) -> None:
    refs: set[str] = set()
    for ti, tx in enumerate(transactions):
        _check_date(tx.posted_on, f"{at}.transactions[{ti}].posted_on")
        if tx.ref in refs:
            raise ImportRejected(f"duplicate transaction ref {tx.ref!r} - at `{at}.transactions[{ti}].ref`")
        refs.add(tx.ref)
        amount = Decimal(tx.amount)
        if tx.kind == "adjustment" and amount == 0:
            raise ImportRejected(f"an adjustment must not be zero - at `{at}.transactions[{ti}].amount`")
        if tx.kind != "adjustment" and amount <= 0:
            raise ImportRejected(
                f"amount must be positive for a {tx.kind} (only adjustments are signed) "
                f"- at `{at}.transactions[{ti}].amount`"
            )


def _chunks(rows: list[dict[str, Any]], size: int) -> Iterable[list[dict[str, Any]]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


async def _upsert(conn: AsyncConnection, table: Table, rows: list[dict[str, Any]], keys: Sequence[str]) -> Counts:
    """Insert new rows, update changed ones, leave identical ones untouched (no new row version)."""
    counts = Counts()
    if not rows:
        return counts
    columns = [c for c in rows[0] if c not in keys]
    # Postgres takes at most 32767 bind parameters per statement.
    for chunk in _chunks(rows, 30000 // len(rows[0])):
        insert = pg_insert(table).values(chunk)
        stmt = insert.on_conflict_do_update(
            index_elements=list(keys),
            set_={c: insert.excluded[c] for c in columns},
            where=tuple_(*(table.c[c] for c in columns)).is_distinct_from(
                tuple_(*(insert.excluded[c] for c in columns))
            ),
        ).returning(literal_column("xmax = '0'", Boolean))  # xmax is 0 in a freshly inserted row version
        written = (await conn.execute(stmt)).scalars().all()
        counts.created += sum(1 for inserted in written if inserted)
        counts.updated += sum(1 for inserted in written if not inserted)
        counts.unchanged += len(chunk) - len(written)
    return counts


async def _ids(conn: AsyncConnection, table: Table, tenant: int, refs: Iterable[str]) -> dict[str, int]:
    result = await conn.execute(
        select(table.c.ref, table.c.id).where(table.c.tenant_id == tenant, table.c.ref.in_(list(refs)))
    )
    return {ref: id_ for ref, id_ in result.all()}


async def import_file(conn: AsyncConnection, doc: ImportFile) -> ImportReport:
    """Write a checked file inside the caller's transaction; raises ImportRejected on conflict."""
    tenant = await find_tenant(conn, doc.tenant)
    if tenant is None:
        raise ImportRejected(
            f"unknown tenant {doc.tenant!r}: create it first with `bill-assistant tenants create` - at `$.tenant`"
        )
    report = ImportReport(tenant=doc.tenant)
    customers_t, accounts_t = cast(Table, Customer.__table__), cast(Table, Account.__table__)
    statements_t, transactions_t = cast(Table, Statement.__table__), cast(Table, Transaction.__table__)

    report.tables["customers"] = await _upsert(
        conn,
        customers_t,
        [{"tenant_id": tenant, "ref": c.ref, "name": c.name, "locale": c.locale} for c in doc.customers],
        ["tenant_id", "ref"],
    )
    customer_ids = await _ids(conn, customers_t, tenant, (c.ref for c in doc.customers))
    accounts = [(c, a) for c in doc.customers for a in c.accounts]
    report.tables["accounts"] = await _upsert(
        conn,
        accounts_t,
        [
            {
                "tenant_id": tenant,
                "ref": a.ref,
                "customer_id": customer_ids[c.ref],
                "kind": a.kind,
                "currency": a.currency,
                "masked_number": a.masked_number,
                "opening_balance": Decimal(a.opening_balance),
            }
            for c, a in accounts
        ],
        ["tenant_id", "ref"],
    )
    account_ids = await _ids(conn, accounts_t, tenant, (a.ref for _, a in accounts))
    report.tables["statements"] = await _upsert(
        conn,
        statements_t,
        [
            {
                "tenant_id": tenant,
                "account_id": account_ids[a.ref],
                "period_end": s.period_end,
                "period_start": s.period_start,
                "due_date": s.due_date,
                "minimum_due": Decimal(s.minimum_due),
            }
            for _, a in accounts
            for s in a.statements
        ],
        ["account_id", "period_end"],
    )
    report.tables["transactions"] = await _upsert(
        conn,
        transactions_t,
        [
            {
                "tenant_id": tenant,
                "account_id": account_ids[a.ref],
                "ref": t.ref,
                "posted_on": t.posted_on,
                "kind": t.kind,
                "amount": Decimal(t.amount),
                "merchant": t.merchant,
                "category": t.category,
                "description": t.description,
            }
            for _, a in accounts
            for t in a.transactions
        ],
        ["account_id", "ref"],
    )
    await check_no_overlap(conn, list(account_ids.values()))
    # Fresh planner statistics: after a bulk load the tables would wait for autovacuum (a minute or
    # more), and meanwhile the history query every answer runs takes a plan about twice as slow
    # (an index that only filters the accounts by ref, a bitmap over every statement of the tenant).
    # ANALYZE samples a bounded number of rows, so this stays cheap on large tables.
    await conn.execute(text("ANALYZE customers, accounts, statements, transactions"))
    return report


async def check_no_overlap(conn: AsyncConnection, account_ids: list[int]) -> None:
    """The file's statements are checked among themselves; this checks them against stored ones."""
    s1, s2, acc = Statement.__table__.alias(), Statement.__table__.alias(), Account.__table__
    row = (
        await conn.execute(
            select(acc.c.ref, s1.c.period_end, s2.c.period_end)
            .join(s2, (s2.c.account_id == s1.c.account_id) & (s2.c.id > s1.c.id))
            .join(acc, acc.c.id == s1.c.account_id)
            .where(
                s1.c.account_id.in_(account_ids),
                s1.c.period_start <= s2.c.period_end,
                s2.c.period_start <= s1.c.period_end,
            )
            .limit(1)
        )
    ).first()
    if row is not None:
        raise ImportRejected(f"account {row[0]}: the statement ending {row[1]} overlaps the one ending {row[2]}")
