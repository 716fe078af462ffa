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

from app.data.csv_import import load_csv
from app.data.importer import ImportReport
from app.errors import ImportRejected
from tests.factories import document, tx, write_csv


async def _load(engine: AsyncEngine, tenant: str, files: dict[str, Path]) -> ImportReport:
    async with engine.begin() as conn:
        return await load_csv(conn, tenant, files, lambda name, chunk: None)


async def _amounts(engine: AsyncEngine, tenant_id: int) -> dict[str, str]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT ref, amount::text FROM transactions WHERE tenant_id = :t"), {"t": tenant_id}
        )
        return dict(rows.tuples().all())


async def test_a_nightly_file_is_checked_and_counted_as_a_whole(
    make_tenant: Any, engine: AsyncEngine, tmp_path: Path
) -> None:
    tenant = await make_tenant()
    doc = document(tenant.slug)
    await _load(engine, tenant.slug, write_csv(doc, tmp_path))
    stored = await _amounts(engine, tenant.id)
    lines = doc["customers"][0]["accounts"][0]["transactions"]

    lines[2]["amount"] = "-1.00"  # line 4: changed, and wrong
    lines.append(tx("T-2", "2026-10-20", "purchase", "5.00", "Kiosk"))  # line 8: new, repeats line 3's ref
    with pytest.raises(ImportRejected) as rejected:
        await _load(engine, tenant.slug, write_csv(doc, tmp_path))
    assert str(rejected.value).splitlines() == [
        "transactions.csv: line 4, column amount: must be positive (only adjustments are signed)",
        "transactions.csv: line 8, column ref: repeats the row of line 3",
    ]
    assert await _amounts(engine, tenant.id) == stored

    lines[2]["amount"] = "101.00"  # a correction
    lines[-1]["ref"] = "T-7"  # a new line
    report = await _load(engine, tenant.slug, write_csv(doc, tmp_path))
    counts = report.tables["transactions"]
    assert (counts.created, counts.updated, counts.unchanged) == (1, 1, 5)
    assert await _amounts(engine, tenant.id) == stored | {"T-3": "101.00", "T-7": "5.00"}
