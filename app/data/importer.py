"""Imports a checked JSON exchange file (app/data/import_format.py).

A file is checked whole before anything is written and written in one transaction, so a bad file
changes nothing. Rows are matched by ref (statements by account and period end): importing the same
file again changes nothing, and a corrected row is updated in place. The rows go the way of a CSV
load's (COPY into staging tables, one merge a table: app/data/staging.py).
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import TYPE_CHECKING

import asyncpg

from app.data import sql
from app.data.csv_checks import check_no_overlap
from app.data.csv_format import TABLES
from app.data.import_format import ImportFile
from app.data.staging import (
    Counts,
    ImportReport,
    lines_of_new_statements,
    load_memory,
    merge,
    stage_rows,
    statements_summarized_once,
    tenant_id,
    text_field,
)
from app.errors import ImportRejected

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

_ACCOUNTS = sql.Statement(
    "SELECT a.id FROM stage_accounts s JOIN accounts a ON a.tenant_id = :tenant_id AND a.ref = s.ref"
)


def _rows(doc: ImportFile) -> dict[str, list[str]]:
    """The file's rows as COPY text lines, by table (the CSV files' columns: app/data/csv_format.py)."""
    f = text_field
    rows: dict[str, list[str]] = {name: [] for name in TABLES}
    for c in doc.customers:
        rows["customers"].append(f"{f(c.ref)}\t{f(c.name)}\t{c.locale}")
        for a in c.accounts:
            ref = f(a.ref)
            rows["accounts"].append(
                f"{ref}\t{f(c.ref)}\t{f(a.kind)}\t{a.currency}\t{f(a.masked_number)}\t{a.opening_balance}"
            )
            rows["statements"] += (
                f"{ref}\t{s.period_start}\t{s.period_end}\t{s.due_date}\t{s.minimum_due}" for s in a.statements
            )
            rows["transactions"] += (
                f"{ref}\t{f(t.ref)}\t{t.posted_on}\t{t.kind}\t{t.amount}\t{f(t.merchant)}\t{f(t.category)}"
                f"\t{f(t.description)}"
                for t in a.transactions
            )
    return rows


async def import_file(conn: AsyncConnection | asyncpg.Connection, doc: ImportFile) -> ImportReport:
    """Write a checked file inside the caller's transaction; raises ImportRejected on conflict.
    Its rows are staged and merged as a CSV load's are (app/data/staging.py), on the driver's
    connection: the command's own (it starts without SQLAlchemy, as a CSV load does), or the one
    under a SQLAlchemy connection the caller holds."""
    if isinstance(conn, asyncpg.Connection):
        raw = conn
    else:  # a caller's SQLAlchemy connection begins the driver's transaction at its first statement
        from sqlalchemy import text

        from app.data.database import driver_of

        await conn.execute(text("SELECT 1"))
        raw = await driver_of(conn)
    try:
        tenant = await tenant_id(raw, doc.tenant)
    except ImportRejected as exc:
        raise ImportRejected(f"{exc} - at `$.tenant`") from None
    await load_memory(raw)
    staged = {name: await stage_rows(raw, TABLES[name], rows) for name, rows in _rows(doc).items()}
    report = ImportReport(tenant=doc.tenant)
    async with statements_summarized_once(raw, tenant) as new_statements:
        for table, count in ((TABLES[name], count) for name, count in staged.items()):
            async with lines_of_new_statements(raw) if table.lines and new_statements else nullcontext():
                created, updated = await merge(raw, table, tenant)
            report.tables[table.name] = Counts(created=created, updated=updated, unchanged=count - created - updated)
            if created or updated:  # the next table's merge joins this one: plan it with what is there now
                await raw.execute(f"ANALYZE {table.name}")
    accounts = await raw.fetch(_ACCOUNTS.sql, *_ACCOUNTS.args({"tenant_id": tenant}))
    await raw.execute("DROP TABLE stage_customers, stage_accounts, stage_statements, stage_transactions")
    await check_no_overlap(raw, [r["id"] for r in accounts])
    # Fresh planner statistics: after a bulk load the tables would wait for autovacuum (a minute or
    # more), and meanwhile the history query every answer runs takes a plan about twice as slow
    # (an index that only filters the accounts by ref, a bitmap over every statement of the tenant).
    # ANALYZE samples a bounded number of rows, so this stays cheap on large tables.
    await raw.execute("ANALYZE customers, accounts, statements, transactions")
    return report
