"""Import: idempotent by ref, corrections update in place, bad files are rejected whole."""

from __future__ import annotations

import copy
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.errors import ImportRejected
from tests.factories import GYM_STORY, SEPT, account, customer, document, load_files, snapshot, statement, tx, write_csv


async def test_import_creates_then_reimport_changes_nothing(make_tenant: Any, load: Any, engine: AsyncEngine) -> None:
    tenant = await make_tenant()
    doc = document(tenant.slug, [customer(), customer("C-1002", "zh-CN", [account("A-2", "CNY")])])
    first = await load(doc)
    assert {name: (c.created, c.updated, c.unchanged) for name, c in first.tables.items()} == {
        "customers": (2, 0, 0),
        "accounts": (2, 0, 0),
        "statements": (4, 0, 0),
        "transactions": (12, 0, 0),
    }
    before = await snapshot(engine, tenant.id)
    again = await load(doc)
    assert {name: (c.created, c.updated, c.unchanged) for name, c in again.tables.items()} == {
        "customers": (0, 0, 2),
        "accounts": (0, 0, 2),
        "statements": (0, 0, 4),
        "transactions": (0, 0, 12),
    }
    assert await snapshot(engine, tenant.id) == before


async def test_a_corrected_row_is_updated_in_place(make_tenant: Any, load: Any, engine: AsyncEngine) -> None:
    tenant = await make_tenant()
    doc = document(tenant.slug)
    await load(doc)
    fixed = copy.deepcopy(doc)
    fixed["customers"][0]["accounts"][0]["transactions"][4]["amount"] = "15.00"
    fixed["customers"][0]["accounts"][0]["transactions"].append(tx("T-9", "2026-10-30", "fee", "5.00"))
    report = await load(fixed)
    assert (report.tables["transactions"].created, report.tables["transactions"].updated) == (1, 1)
    assert report.tables["transactions"].unchanged == 5
    async with engine.connect() as conn:
        amount = (
            await conn.execute(
                text("SELECT amount::text FROM transactions WHERE tenant_id = :t AND ref = 'T-5'"), {"t": tenant.id}
            )
        ).scalar()
    assert amount == "15.00"


async def test_a_conflict_found_while_writing_leaves_nothing_written(
    make_tenant: Any, load: Any, engine: AsyncEngine
) -> None:
    tenant = await make_tenant()
    await load(document(tenant.slug))
    before = await snapshot(engine, tenant.id)
    # New customer first (valid), then a statement that overlaps the stored ones of A-1.
    overlapping = statement("2026-10-15", "2026-11-14", "2026-12-10")
    doc = document(tenant.slug, [customer("C-2000", accounts=[account("A-2000")]),
                                 customer(accounts=[account(statements=[overlapping])])])  # fmt: skip
    with pytest.raises(ImportRejected, match="overlaps"):
        await load(doc)
    assert await snapshot(engine, tenant.id) == before


async def test_an_unknown_tenant_is_rejected(load: Any) -> None:
    with pytest.raises(ImportRejected, match="unknown tenant 'no-such-bank'"):
        await load(document("no-such-bank"))


async def test_the_database_refuses_rows_that_cross_tenants(make_tenant: Any, load: Any, engine: AsyncEngine) -> None:
    a, b = await make_tenant(), await make_tenant()
    await load(document(a.slug))
    async with engine.connect() as conn:
        customer_of_a = (
            await conn.execute(text("SELECT id FROM customers WHERE tenant_id = :t"), {"t": a.id})
        ).scalar()
    async with engine.begin() as conn:
        with pytest.raises(IntegrityError):
            await conn.execute(
                text(
                    "INSERT INTO accounts (tenant_id, customer_id, ref, kind, currency, masked_number, opening_balance)"
                    " VALUES (:t, :c, 'A-X', 'credit_card', 'EUR', '****', 0)"
                ),
                {"t": b.id, "c": customer_of_a},
            )


async def test_an_import_leaves_fresh_planner_statistics_for_the_tables_it_wrote(
    make_tenant: Any, load: Any, engine: AsyncEngine
) -> None:
    tenant = await make_tenant()
    await load(document(tenant.slug, [customer(f"C-{i}", accounts=[account(f"A-{i}")]) for i in range(30)]))
    tables = ("customers", "accounts", "statements", "transactions")
    async with engine.connect() as conn:
        counts = {t: (await conn.execute(text(f"SELECT count(*) FROM {t}"))).scalar_one() for t in tables}
        estimates = {
            t: (
                await conn.execute(
                    text("SELECT reltuples::bigint FROM pg_class WHERE oid = CAST(:t AS regclass)"), {"t": t}
                )
            ).scalar_one()
            for t in tables
        }
    assert estimates == counts


async def _ledger(engine: AsyncEngine, tenant_id: int) -> dict[str, list[Any]]:
    """The tenant's rows as the answers read them, without ids (another tenant's rows have others)."""
    queries = {
        "customers": "SELECT ref, name, locale FROM customers WHERE tenant_id = :t",
        "accounts": "SELECT a.ref, c.ref, a.kind, a.currency, a.masked_number, a.opening_balance::text"
        " FROM accounts a JOIN customers c ON c.id = a.customer_id WHERE a.tenant_id = :t",
        "statements": "SELECT period_start, period_end, due_date, minimum_due::text FROM statements"
        " WHERE tenant_id = :t",
        "transactions": "SELECT ref, posted_on, kind, amount::text, merchant, category, description"
        " FROM transactions WHERE tenant_id = :t",
        "summaries": "SELECT s.period_end, ss.net::text, to_json(ss.totals)::text,"
        " (SELECT jsonb_agg(e - 'id' ORDER BY n) FROM jsonb_array_elements(to_jsonb(ss.lines)) WITH ORDINALITY x(e, n))"
        "::text FROM statements s JOIN statement_summaries ss ON ss.statement_id = s.id WHERE s.tenant_id = :t",
    }
    async with engine.connect() as conn:
        return {
            name: sorted((await conn.execute(text(query), {"t": tenant_id})).tuples().all())
            for name, query in queries.items()
        }


async def test_a_json_file_lands_the_rows_of_the_same_csv_files(
    make_tenant: Any, load: Any, engine: AsyncEngine, tmp_path: Path
) -> None:
    """One road for both importers (app/data/staging.py): text with backslashes, and what COPY's
    text format would take for a tab or a NULL, lands as it was written."""
    by_json, by_csv = await make_tenant(), await make_tenant()
    odd = [
        tx("T-8", "2026-10-20", "purchase", "7.5", "Back\\slash", description="C:\\temp\\new \\N"),
        tx("T-9", "2026-10-21", "fee", "2.00", category="fees", description="Late fee"),
    ]
    accounts = [account(transactions=[*GYM_STORY, *odd]), account("A-2", statements=[SEPT], transactions=[])]
    doc = document(
        by_json.slug,
        [customer(accounts=accounts), customer("C-1002", "zh-CN", [account("A-3", statements=[], transactions=[])])],
    )
    report = await load(doc)
    assert report.summary().endswith("transactions: 8 created, 0 updated, 0 unchanged")
    await load_files(engine, by_csv.slug, write_csv(document(by_csv.slug, doc["customers"]), tmp_path))
    stored = await _ledger(engine, by_json.id)
    assert stored == await _ledger(engine, by_csv.id)
    assert ("T-8", date(2026, 10, 20), "purchase", "7.50", "Back\\slash", None, "C:\\temp\\new \\N") in stored[
        "transactions"
    ]


async def test_an_empty_text_and_a_missing_one_stay_apart(make_tenant: Any, load: Any, engine: AsyncEngine) -> None:
    tenant = await make_tenant()
    line = tx("T-1", "2026-10-03", "purchase", "1.00", "", category=None)
    await load(document(tenant.slug, [customer(accounts=[account(transactions=[line])])]))
    async with engine.connect() as conn:
        query = text("SELECT merchant, category FROM transactions WHERE tenant_id = :t")
        row = (await conn.execute(query, {"t": tenant.id})).one()
    assert tuple(row) == ("", None)
