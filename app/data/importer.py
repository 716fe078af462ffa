"""Imports a checked JSON exchange file (app/data/import_format.py).

A file is checked whole before anything is written and written in one transaction, so a bad file
changes nothing. Rows are matched by ref (statements by account and period end): importing the same
file again changes nothing, and a corrected row is updated in place.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, cast

from sqlalchemy import Boolean, Table, literal_column, select, text, tuple_
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from app.data.import_format import ImportFile
from app.data.models import Account, Customer, Statement, Transaction
from app.data.tenants import tenant_id as find_tenant
from app.errors import ImportRejected


@dataclass(kw_only=True)
class Counts:
    created: int = 0
    updated: int = 0
    unchanged: int = 0


@dataclass
class ImportReport:
    tenant: str
    tables: dict[str, Counts] = field(default_factory=dict)
    same_as_last_load: bool = False  # CSV: the files of the last load, nothing written since

    def summary(self) -> str:
        parts = [
            f"{name}: {c.created} created, {c.updated} updated, {c.unchanged} unchanged"
            for name, c in self.tables.items()
        ]
        same = (
            " (the files of the last load, and nothing of the tenant's written since)" if self.same_as_last_load else ""
        )
        return f"tenant {self.tenant}{same}: " + "; ".join(parts)


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
