"""Bulk loads from CSV through COPY: the same rows as the JSON importer, idempotent, all or nothing,
and every rejected row named by file, line and column."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.data import csv_direct
from app.data.connecting import connect
from app.data.csv_format import TABLES
from app.data.csv_import import load_csv
from app.errors import ImportRejected
from tests.factories import customer, document, load_files, snapshot, tx, write_csv


async def rows_of(engine: AsyncEngine, tenant_id: int) -> list[Any]:
    """The tenant's rows without ids, and each statement's summary: what an answer reads."""
    queries = [
        "SELECT ref, name, locale FROM customers WHERE tenant_id = :t ORDER BY ref",
        "SELECT a.ref, c.ref, a.kind, a.currency, a.masked_number, a.opening_balance FROM accounts a "
        "JOIN customers c ON c.id = a.customer_id WHERE a.tenant_id = :t ORDER BY a.ref",
        "SELECT a.ref, s.period_start, s.period_end, s.due_date, s.minimum_due, ss.net, to_json(ss.totals), "
        "(SELECT jsonb_agg(CAST(x AS jsonb) - 'id') FROM json_array_elements(to_json(ss.lines)) x) "
        "FROM statements s JOIN accounts a ON a.id = s.account_id "
        "JOIN statement_summaries ss ON ss.statement_id = s.id "
        "WHERE s.tenant_id = :t ORDER BY a.ref, s.period_end",
        "SELECT a.ref, t.ref, t.posted_on, t.kind, t.amount, t.merchant, t.category, t.description "
        "FROM transactions t JOIN accounts a ON a.id = t.account_id WHERE t.tenant_id = :t ORDER BY a.ref, t.ref",
    ]
    async with engine.connect() as conn:
        return [list((await conn.execute(text(q), {"t": tenant_id})).all()) for q in queries]


async def test_csv_loads_the_same_rows_and_summaries_as_json(
    make_tenant: Any, load: Any, engine: AsyncEngine, tmp_path: Path
) -> None:
    by_json, by_csv = await make_tenant(), await make_tenant()
    doc = document(by_json.slug, [customer(), customer("C-1002", "zh-CN")])
    doc["customers"][1]["accounts"][0]["ref"] = "A-2"
    await load(doc)
    report = await load_files(engine, by_csv.slug, write_csv(doc, tmp_path))
    assert {name: (c.created, c.updated, c.unchanged) for name, c in report.tables.items()} == {
        "customers": (2, 0, 0),
        "accounts": (2, 0, 0),
        "statements": (4, 0, 0),
        "transactions": (12, 0, 0),
    }
    stored = await rows_of(engine, by_csv.id)
    assert stored == await rows_of(engine, by_json.id)
    assert len(stored[3]) == 12


async def _load_counting(engine: AsyncEngine, tenant: str, files: dict[str, Path]) -> dict[str, int]:
    """A CSV load's rows inserted, by table, staging tables included (pg_stat_xact_user_tables counts
    the load's own transaction, a restarted attempt's rows too)."""
    raw = await connect(engine.url.render_as_string(hide_password=False))
    try:
        async with raw.transaction():
            await load_csv(raw, tenant, files, lambda *_: None)
            counted = await raw.fetch("SELECT relname, n_tup_ins FROM pg_stat_xact_user_tables WHERE n_tup_ins > 0")
    finally:
        await raw.close()
    return {r["relname"]: r["n_tup_ins"] for r in counted}


async def test_a_clean_first_load_copies_its_lines_straight_in(
    make_tenant: Any, load: Any, engine: AsyncEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No staging table for the lines (app/data/csv_direct.py), read in chunks that cut lines in two,
    and the same rows and summaries as the JSON importer's."""
    monkeypatch.setattr(csv_direct, "CHUNK", 37)
    by_json, by_csv = await make_tenant(), await make_tenant()
    await load(document(by_json.slug))
    inserted = await _load_counting(engine, by_csv.slug, write_csv(document(by_csv.slug), tmp_path))
    assert (inserted["transactions"], inserted["statements"], inserted.get("stage_transactions")) == (6, 2, None)
    assert inserted["stage_statements"] == 2  # the other files are staged, as ever
    assert await rows_of(engine, by_csv.id) == await rows_of(engine, by_json.id)


async def test_a_first_load_that_cannot_go_straight_in_is_staged(
    make_tenant: Any, load: Any, engine: AsyncEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A quoted field in the file's last chunk stops the copy after earlier chunks were sent: the
    load starts again, staged, and stores what the JSON importer stores; an unknown account is named."""
    monkeypatch.setattr(csv_direct, "CHUNK", 37)
    by_json, by_csv = await make_tenant(), await make_tenant()
    doc = document(by_json.slug)
    doc["customers"][0]["accounts"][0]["transactions"].append(tx("T-9", "2026-10-20", "purchase", "5.00", "Shop, Inc."))
    await load(doc)
    doc["tenant"] = by_csv.slug
    inserted = await _load_counting(engine, by_csv.slug, write_csv(doc, tmp_path))
    assert inserted["stage_transactions"] == 7
    assert await rows_of(engine, by_csv.id) == await rows_of(engine, by_json.id)

    stranger = await make_tenant()
    doc = document(stranger.slug)
    doc["customers"][0]["accounts"][0]["transactions"][3]["account_ref"] = "A-404"
    with pytest.raises(ImportRejected) as rejected:
        await load_files(engine, stranger.slug, write_csv(doc, tmp_path))
    assert str(rejected.value) == "transactions.csv: line 5, column account_ref: names no account of this tenant"
    assert await snapshot(engine, stranger.id) == []


async def test_an_unchanged_reload_writes_nothing_and_a_correction_updates_in_place(
    make_tenant: Any, engine: AsyncEngine, tmp_path: Path
) -> None:
    tenant = await make_tenant()
    doc = document(tenant.slug)
    files = write_csv(doc, tmp_path)
    await load_files(engine, tenant.slug, files)
    before = await snapshot(engine, tenant.id)
    again = await load_files(engine, tenant.slug, files)  # the same files: answered from the last load
    assert again.same_as_last_load
    assert {name: (c.created, c.updated) for name, c in again.tables.items()} == dict.fromkeys(TABLES, (0, 0))
    assert again.tables["transactions"].unchanged == 6
    forced = await load_files(engine, tenant.slug, files, force=True)  # loaded in full: still nothing to write
    assert not forced.same_as_last_load
    assert {name: (c.created, c.updated, c.unchanged) for name, c in forced.tables.items()} == {
        name: (0, 0, c.unchanged) for name, c in again.tables.items()
    }
    assert await snapshot(engine, tenant.id) == before  # not one row written again

    async with engine.begin() as conn:  # another writer changes a line: the same files must put it back
        await conn.execute(
            text("UPDATE transactions SET amount = 99 WHERE tenant_id = :t AND ref = 'T-5'"), {"t": tenant.id}
        )
    restored = await load_files(engine, tenant.slug, files)
    assert (restored.same_as_last_load, restored.tables["transactions"].updated) == (False, 1)
    lines = [row[:1] + row[2:] for row in await snapshot(engine, tenant.id) if row[0] == "transactions"]
    assert lines == [row[:1] + row[2:] for row in before if row[0] == "transactions"]  # the file's amount is back
    assert await load_files(engine, tenant.slug, files) == again  # and now it is the last load again

    doc["customers"][0]["accounts"][0]["transactions"][4]["amount"] = "15.00"  # the gym: 12.00 -> 15.00
    corrected = await load_files(engine, tenant.slug, write_csv(doc, tmp_path))
    assert (corrected.tables["transactions"].updated, corrected.tables["transactions"].created) == (1, 0)
    async with engine.connect() as conn:
        net = (await conn.execute(text(
            "SELECT ss.net FROM statement_summaries ss JOIN statements s ON s.id = ss.statement_id "
            "WHERE s.tenant_id = :t AND s.period_end = '2026-10-31'"), {"t": tenant.id})).scalar_one()  # fmt: skip
    assert str(net) == "15.00"  # 100.00 + 12.99 + 15.00 - 112.99


async def test_bad_rows_are_named_by_file_line_and_column_and_nothing_is_written(
    make_tenant: Any, engine: AsyncEngine, tmp_path: Path
) -> None:
    tenant = await make_tenant()
    doc = document(tenant.slug)
    lines = doc["customers"][0]["accounts"][0]["transactions"]
    lines[1]["posted_on"] = "2026-02-30"  # line 3 of the file: no such day
    lines[2]["account_ref"] = "A-404"  # line 4: no such account
    lines[3]["amount"] = "-12.99"  # line 5: a purchase is positive
    lines[4]["merchant"] = "City\tGym"  # line 6: a control character
    lines[5]["ref"] = "T-1"  # line 7: the ref of line 2 again
    files = write_csv(doc, tmp_path)
    with pytest.raises(ImportRejected) as rejected:
        await load_files(engine, tenant.slug, files)
    assert str(rejected.value).splitlines() == [
        "transactions.csv: line 3, column posted_on: must be a date YYYY-MM-DD from 1970-01-01 to 2099-12-31",
        "transactions.csv: line 4, column account_ref: names no account of this tenant",
        "transactions.csv: line 5, column amount: must be positive (only adjustments are signed)",
        "transactions.csv: line 6, column merchant: contains a control character",
        "transactions.csv: line 7, column ref: repeats the row of line 2",
    ]
    assert await snapshot(engine, tenant.id) == []


async def test_a_first_load_whose_only_fault_is_a_repeated_key_names_it(
    make_tenant: Any, engine: AsyncEngine, tmp_path: Path
) -> None:
    """A first load leaves repeated keys to the table's unique key (app/data/csv_import.py `_insert`):
    the file is still rejected with the line it repeats, and nothing is written."""
    tenant = await make_tenant()
    doc = document(tenant.slug)
    lines = doc["customers"][0]["accounts"][0]["transactions"]
    lines[5]["ref"] = "T-1"  # line 7: the ref of line 2 again
    with pytest.raises(ImportRejected) as rejected:
        await load_files(engine, tenant.slug, write_csv(doc, tmp_path))
    assert str(rejected.value) == "transactions.csv: line 7, column ref: repeats the row of line 2"
    assert await snapshot(engine, tenant.id) == []


async def test_a_malformed_file_is_rejected_with_its_line(
    make_tenant: Any, engine: AsyncEngine, tmp_path: Path
) -> None:
    tenant = await make_tenant()
    files = write_csv(document(tenant.slug), tmp_path)
    body = files["statements"].read_text().splitlines()
    body[2] += ",extra"
    files["statements"].write_text("\n".join(body) + "\n")
    with pytest.raises(ImportRejected, match=r"^statements\.csv: line 3: extra data after last expected column"):
        await load_files(engine, tenant.slug, files)
    files["statements"].write_text("account_ref,period_start,period_end,due\n")
    with pytest.raises(
        ImportRejected, match=r"statements\.csv: line 1: .*unknown: due; missing: due_date, minimum_due"
    ):
        await load_files(engine, tenant.slug, files)
    assert await snapshot(engine, tenant.id) == []


async def test_statements_that_overlap_in_the_file_or_the_store_are_rejected(
    make_tenant: Any, engine: AsyncEngine, tmp_path: Path
) -> None:
    tenant = await make_tenant()
    doc = document(tenant.slug)
    await load_files(engine, tenant.slug, write_csv(doc, tmp_path))
    statements = doc["customers"][0]["accounts"][0]["statements"]
    statements[1]["period_end"] = "2026-11-14"  # now overlaps the stored October statement
    with pytest.raises(ImportRejected, match="overlaps"):
        await load_files(engine, tenant.slug, write_csv(doc, tmp_path))
    statements[1]["period_start"] = "2026-09-15"  # and September's, in the file itself
    with pytest.raises(
        ImportRejected, match=r"statements\.csv: line 3, column period_start: overlaps the statement of line 2"
    ):
        await load_files(engine, tenant.slug, write_csv(doc, tmp_path))


def test_the_command_loads_csv_files_and_reports_counts(cli: Any, tmp_path: Path) -> None:
    assert cli("tenants", "create", "csvbank", "--name", "CSV Bank").exit_code == 0
    files = write_csv(document("csvbank"), tmp_path)
    args = ["import", "--tenant", "csvbank", *(a for name, p in files.items() for a in (f"--{name}", str(p)))]
    result = cli(*args)
    assert result.exit_code == 0, result.output
    assert "transactions: 6 created, 0 updated, 0 unchanged" in result.stdout
    assert "rows/s" in result.stderr
    again = cli(*args)
    assert again.stdout.startswith(
        "tenant csvbank (the files of the last load, and nothing of the tenant's written since):"
    )
    assert "transactions: 0 created, 0 updated, 6 unchanged" in again.stdout
    forced = cli(*args, "--force")
    assert forced.stdout.startswith("tenant csvbank: ")
    assert "transactions: 0 created, 0 updated, 6 unchanged" in forced.stdout
    assert "rows/s" in forced.stderr


def test_a_load_that_starts_over_counts_its_lines_once(cli: Any, tmp_path: Path) -> None:
    """A quoted field stops the straight copy of a first load, which starts over staged (reading its
    files again): the rows the command reports are the files' rows, once."""
    assert cli("tenants", "create", "quotebank", "--name", "Quote Bank").exit_code == 0
    doc = document("quotebank")
    doc["customers"][0]["accounts"][0]["transactions"].append(tx("T-9", "2026-10-20", "purchase", "5.00", "Shop, Inc."))
    files = write_csv(doc, tmp_path)
    result = cli("import", "--tenant", "quotebank", *(a for name, p in files.items() for a in (f"--{name}", str(p))))
    assert result.exit_code == 0, result.output
    assert "transactions: 7 created" in result.stdout
    rows = sum(p.read_bytes().count(b"\n") - 1 for p in files.values())  # each file: a header, then rows
    assert f"\n{rows:,} rows in " in result.stderr


async def test_every_write_to_a_tenants_ledger_moves_its_version_and_no_other(
    make_tenant: Any, load: Any, engine: AsyncEngine
) -> None:
    """What lets a re-load of the same files be skipped safely: any writer, any of the four tables."""
    tenant, other = await make_tenant(), await make_tenant()
    await load(document(tenant.slug))
    await load(document(other.slug))
    version = text("SELECT COALESCE((SELECT version FROM ledger_versions WHERE tenant_id = :t), 0)")

    async def versions() -> tuple[int, int]:
        async with engine.connect() as conn:
            mine = (await conn.execute(version, {"t": tenant.id})).scalar_one()
            theirs = (await conn.execute(version, {"t": other.id})).scalar_one()
        return mine, theirs

    writes = [
        "UPDATE customers SET name = 'Ann B. Lee' WHERE tenant_id = :t",
        "UPDATE accounts SET kind = 'charge_card' WHERE tenant_id = :t",
        "UPDATE statements SET minimum_due = 30 WHERE tenant_id = :t",
        "UPDATE transactions SET description = 'moved' WHERE tenant_id = :t AND ref = 'T-2'",
        "DELETE FROM transactions WHERE tenant_id = :t AND ref = 'T-1'",
    ]
    for write in writes:
        (mine, theirs) = await versions()
        async with engine.begin() as conn:
            await conn.execute(text(write), {"t": tenant.id})
        (mine_after, theirs_after) = await versions()
        assert (write, mine_after > mine, theirs_after) == (write, True, theirs)
    async with engine.begin() as conn:  # a tenant still goes with everything it has
        await conn.execute(text("DELETE FROM tenants WHERE id = :t"), {"t": tenant.id})
    assert await versions() == (0, theirs)
