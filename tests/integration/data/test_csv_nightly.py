"""A CSV load of a file mostly identical to what is stored (a nightly file): the rows identical to
stored ones are set aside before the checks and the merge (app/data/csv_import.py), and that must
change nothing a load answers: a changed or new row is checked and named by its line, a key
repeated by a changed row and an unchanged one is still refused, and the counts are the file's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.errors import ImportRejected
from tests.factories import document, load_files, tx, write_csv


async def _amounts(engine: AsyncEngine, tenant_id: int) -> dict[str, str]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT ref, amount::text FROM transactions WHERE tenant_id = :t"), {"t": tenant_id}
        )
        return dict(rows.tuples().all())


async def _loaded(make_tenant: Any, engine: AsyncEngine, tmp_path: Path) -> tuple[Any, dict[str, Any], dict[str, str]]:
    """A new tenant with the default document loaded from CSV: the tenant, the document, its amounts."""
    tenant = await make_tenant()
    doc = document(tenant.slug)
    await load_files(engine, tenant.slug, write_csv(doc, tmp_path))
    return tenant, doc, await _amounts(engine, tenant.id)


async def test_a_nightly_file_is_checked_and_counted_as_a_whole(
    make_tenant: Any, engine: AsyncEngine, tmp_path: Path
) -> None:
    tenant, doc, stored = await _loaded(make_tenant, engine, tmp_path)
    lines = doc["customers"][0]["accounts"][0]["transactions"]

    lines[2]["amount"] = "-1.00"  # line 4: changed, and wrong
    lines.append(tx("T-2", "2026-10-20", "purchase", "5.00", "Kiosk"))  # line 8: new, repeats line 3's ref
    with pytest.raises(ImportRejected) as rejected:
        await load_files(engine, tenant.slug, write_csv(doc, tmp_path))
    assert str(rejected.value).splitlines() == [
        "transactions.csv: line 4, column amount: must be positive (only adjustments are signed)",
        "transactions.csv: line 8, column ref: repeats the row of line 3",
    ]
    assert await _amounts(engine, tenant.id) == stored

    lines[2]["amount"] = "101.00"  # a correction
    lines[-1]["ref"] = "T-7"  # a new line
    report = await load_files(engine, tenant.slug, write_csv(doc, tmp_path))
    counts = report.tables["transactions"]
    assert (counts.created, counts.updated, counts.unchanged) == (1, 1, 5)
    assert await _amounts(engine, tenant.id) == stored | {"T-3": "101.00", "T-7": "5.00"}


async def _lines(engine: AsyncEngine, tenant_id: int) -> dict[str, tuple[str, str]]:
    """Each transaction's amount and xmin (a changed xmin: the row was written again)."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT ref, amount::text, xmin::text FROM transactions WHERE tenant_id = :t"), {"t": tenant_id}
        )
        return {ref: (amount, xmin) for ref, amount, xmin in rows.tuples()}


async def _summaries(engine: AsyncEngine, tenant_id: int) -> list[tuple[Any, ...]]:
    """Each statement's summary and data version, its named lines without their ids (another
    tenant's rows have other ids)."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT s.period_end, s.data_version, ss.net::text, to_json(ss.totals)::text,"
                " (SELECT jsonb_agg(e - 'id' ORDER BY n) FROM jsonb_array_elements(to_jsonb(ss.lines))"
                "  WITH ORDINALITY AS x(e, n))::text"
                " FROM statements s JOIN statement_summaries ss ON ss.statement_id = s.id"
                " WHERE s.tenant_id = :t ORDER BY s.period_end"
            ),
            {"t": tenant_id},
        )
        return [tuple(row) for row in rows.tuples()]


async def test_a_nightly_file_writes_only_what_changed_and_leaves_the_summaries_of_a_first_load(
    make_tenant: Any, engine: AsyncEngine, tmp_path: Path
) -> None:
    tenant, fresh = await make_tenant(), await make_tenant()
    doc = document(tenant.slug)
    await load_files(engine, tenant.slug, write_csv(doc, tmp_path))
    before, versions = await _lines(engine, tenant.id), [v[1] for v in await _summaries(engine, tenant.id)]

    lines = doc["customers"][0]["accounts"][0]["transactions"]
    lines[3]["amount"] = "13.49"  # October's Netflix, changed
    lines.append(tx("T-7", "2026-10-20", "purchase", "5.00", "Kiosk"))  # new in October
    report = await load_files(engine, tenant.slug, write_csv(doc, tmp_path))
    counts = report.tables["transactions"]
    assert (counts.created, counts.updated, counts.unchanged) == (1, 1, 5)
    after = await _lines(engine, tenant.id)
    assert after["T-4"][0] == "13.49"
    assert after["T-7"][0] == "5.00"
    assert {ref: after[ref] for ref in before if ref != "T-4"} == {ref: v for ref, v in before.items() if ref != "T-4"}

    # The summaries are those of the same file loaded first; October's (changed and added to in one
    # merge) refreshed once, so its data version moved once; September's not at all.
    (tmp_path / "fresh").mkdir()
    await load_files(engine, fresh.slug, write_csv(document(fresh.slug, doc["customers"]), tmp_path / "fresh"))
    summaries = await _summaries(engine, tenant.id)
    assert [s[2:] for s in summaries] == [s[2:] for s in await _summaries(engine, fresh.id)]
    assert [s[1] for s in summaries] == [versions[0], versions[1] + 1]


async def test_a_nightly_line_repeating_an_unchanged_lines_key_is_refused(
    make_tenant: Any, engine: AsyncEngine, tmp_path: Path
) -> None:
    tenant, doc, stored = await _loaded(make_tenant, engine, tmp_path)
    lines = doc["customers"][0]["accounts"][0]["transactions"]

    lines.append(tx("T-2", "2026-10-20", "purchase", "5.00", "Kiosk"))  # line 8: new, valid on its own
    with pytest.raises(ImportRejected) as rejected:
        await load_files(engine, tenant.slug, write_csv(doc, tmp_path))
    assert str(rejected.value) == "transactions.csv: line 8, column ref: repeats the row of line 3"

    lines[-1] = dict(lines[1])  # line 8: line 3 again, byte for byte
    with pytest.raises(ImportRejected) as rejected:
        await load_files(engine, tenant.slug, write_csv(doc, tmp_path))
    assert str(rejected.value) == "transactions.csv: line 8, column ref: repeats the row of line 3"
    assert await _amounts(engine, tenant.id) == stored


async def test_a_line_as_last_loaded_is_put_back_after_another_write(
    make_tenant: Any, engine: AsyncEngine, tmp_path: Path
) -> None:
    """Another writer moves the ledger version: the last load's lines no longer say what is stored,
    and the next file is loaded in full."""
    tenant, doc, stored = await _loaded(make_tenant, engine, tmp_path)
    async with engine.begin() as conn:  # a correction made elsewhere (the console, a JSON import)
        await conn.execute(
            text("UPDATE transactions SET amount = 1.00 WHERE tenant_id = :t AND ref = 'T-1'"), {"t": tenant.id}
        )

    doc["customers"][0]["accounts"][0]["transactions"][3]["amount"] = "13.49"  # and one line changed
    report = await load_files(engine, tenant.slug, write_csv(doc, tmp_path))
    assert (report.tables["transactions"].updated, report.tables["transactions"].unchanged) == (2, 4)
    assert await _amounts(engine, tenant.id) == stored | {"T-4": "13.49"}


async def _pages(engine: AsyncEngine, tenant_id: int) -> dict[str, int]:
    """The page each transaction is on (the block of its ctid)."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT ref, (ctid::text::point)[0]::int FROM transactions WHERE tenant_id = :t"), {"t": tenant_id}
        )
        return dict(rows.tuples().all())


async def test_a_nightly_loads_updates_stay_on_their_pages(
    make_tenant: Any, engine: AsyncEngine, tmp_path: Path
) -> None:
    """A settled amount is written on the page its line was on (migration 0032): an update that needs
    no new index entry (HOT), where a page packed full by the first load sent every one elsewhere."""
    tenant = await make_tenant()
    doc = document(tenant.slug)
    lines = doc["customers"][0]["accounts"][0]["transactions"]
    lines += [tx(f"P-{n}", "2026-10-02", "purchase", "1.00", "Kiosk") for n in range(600)]  # some full pages
    await load_files(engine, tenant.slug, write_csv(doc, tmp_path))
    lines_before = await _pages(engine, tenant.id)

    # One line in twenty (a nightly: one in a hundred), on pages this load filled alone.
    settled = [f"P-{n}" for n in range(100, 500, 20)]
    for line in lines:
        if line["ref"] in settled:
            line["amount"] = "1.25"
    report = await load_files(engine, tenant.slug, write_csv(doc, tmp_path))
    assert report.tables["transactions"].updated == len(settled)
    lines_after = await _pages(engine, tenant.id)
    assert {ref: lines_after[ref] for ref in settled} == {ref: lines_before[ref] for ref in settled}
