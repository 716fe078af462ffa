"""Bulk loads from CSV: each file streamed through COPY into a staging table, checked in SQL with the
JSON importer's rules, then merged by ref inside the caller's transaction (all or nothing).

Files are UTF-8 with a header row naming their columns (any order; README "Bulk loads"). Nothing is
parsed in Python: Postgres reads the CSV, so memory stays bounded whatever the file's size. A rejected
file names its file, line and column, for up to MAX_ERRORS rows. As in app/data/importer.py, a row
identical to the stored one is not written (no new row version, no data-version bump), so an
unchanged re-load writes nothing.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import asyncpg
from sqlalchemy.ext.asyncio import AsyncConnection

from app.data import bulk_loads
from app.data.csv_format import CHUNK, STATEMENTS, TABLES, Table
from app.data.database import driver_of
from app.data.importer import Counts, ImportReport, check_no_overlap
from app.data.sql import Statement
from app.data.tenants import tenant_id as find_tenant
from app.errors import ImportRejected

MAX_ERRORS = 20

_TOUCHED = Statement(
    "SELECT DISTINCT a.id FROM stage_statements s JOIN accounts a ON a.tenant_id = :tenant_id AND a.ref = s.account_ref"
)

Progress = Callable[[str, bytes], None]  # each chunk of a file as it is sent (the file's table name)


def _line(error: str) -> tuple[int, str]:
    """An error's place, to order the errors of one file by line ("line 12, column ref: ...")."""
    number = re.match(r"line (\d+)", error)
    return (int(number[1]) if number else 0, error)


async def _chunks(path: Path, name: str, progress: Progress) -> AsyncIterator[bytes]:
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            progress(name, chunk)
            yield chunk


def _header(path: Path, table: Table) -> list[str]:
    with path.open("rb") as f:
        first = f.readline().decode("utf-8-sig", errors="replace").strip()
    columns = [c.strip() for c in first.split(",")]
    unknown = [c for c in columns if c not in table.columns]
    missing = [c for c in table.columns if c not in columns]
    if unknown or missing:
        raise ImportRejected(
            f"{path.name}: line 1: the header must name the columns {', '.join(table.columns)}"
            + (f"; unknown: {', '.join(unknown)}" if unknown else "")
            + (f"; missing: {', '.join(missing)}" if missing else "")
        )
    return columns


async def _stage(raw: asyncpg.Connection, table: Table, path: Path, progress: Progress) -> int:
    """The file in a temporary table, its rows counted."""
    columns = _header(path, table)
    cols = ", ".join(f"{c} text" for c in table.columns)
    # line: the row's line in the file (rows arrive in order; the header is line 1).
    await raw.execute(
        f"CREATE TEMP TABLE stage_{table.name} (line bigint GENERATED ALWAYS AS IDENTITY (START 2), {cols}) "
        "ON COMMIT DROP"
    )
    try:
        copied = await raw.copy_to_table(
            f"stage_{table.name}",
            source=_chunks(path, table.name, progress),
            columns=columns,
            format="csv",
            header=True,
        )
    except asyncpg.DataError as exc:  # not CSV, a row of the wrong width, not UTF-8, a NUL
        where = re.search(r"line (\d+)", str(getattr(exc, "context", None) or ""))
        raise ImportRejected(f"{path.name}: line {where[1] if where else '?'}: {exc}") from None
    # Temporary tables are never analyzed on their own; without statistics the merge's join to the
    # parents is planned as a nested loop (seconds per 100,000 rows instead of milliseconds).
    await raw.execute(f"ANALYZE stage_{table.name}")
    return int(copied.split()[-1])  # "COPY <rows>"


async def _keep_what_differs(raw: asyncpg.Connection, table: Table, tenant: int) -> None:
    """Drop the staged rows identical, as text, to a stored row of the tenant: they were checked
    when they were loaded and would write nothing. What is left (a nightly file's changed and new
    lines) is all the checks and the merge read. A row written otherwise (12.5 for 12.50) stays,
    and merges as unchanged."""
    assert table.same is not None
    stored, condition = table.same
    stage = f"stage_{table.name}"
    # Copied out rather than deleted in place: what reads it next scans the changed rows only.
    differs = Statement(
        f"CREATE TEMP TABLE {stage}_differs ON COMMIT DROP AS SELECT s.* FROM {stage} s "
        f"WHERE NOT EXISTS (SELECT FROM {stored} WHERE {condition})"
    )
    await raw.execute(differs.sql, *differs.args({"tenant_id": tenant}))
    await raw.execute(f"DROP TABLE {stage}")
    await raw.execute(f"ALTER TABLE {stage}_differs RENAME TO {stage}")
    await raw.execute(f"ANALYZE {stage}")


async def _repeats(raw: asyncpg.Connection, table: Table) -> list[str]:
    """Rows of the whole file that repeat an earlier row's key: asked before the file is narrowed."""
    key = ", ".join(table.file_key)
    rows = await raw.fetch(  # a hash aggregate of the keys: cheaper than sorting the file for a window
        f"SELECT s.line, d.first FROM stage_{table.name} s JOIN (SELECT {key}, min(line) AS first FROM "
        f"stage_{table.name} GROUP BY {key} HAVING count(*) > 1) d USING ({key}) WHERE s.line <> d.first "
        f"ORDER BY s.line LIMIT {MAX_ERRORS}"
    )
    return [f"line {r['line']}, column {table.file_key[-1]}: repeats the row of line {r['first']}" for r in rows]


async def _errors(
    raw: asyncpg.Connection, table: Table, tenant: int, staged: set[str], *, repeats: bool = True
) -> list[str]:
    stage = f"stage_{table.name}"
    key = ", ".join(table.file_key)
    # A row's first failed check of its own, in one scan of the file (CASE stops at the first).
    first = " ".join(f"WHEN {condition} THEN '{col}|{message}'" for col, message, condition in table.checks)
    parts = [
        "SELECT line, split_part(problem, '|', 1) AS col, split_part(problem, '|', 2) AS message FROM "
        f"(SELECT line, CASE {first} END AS problem FROM {stage}) p WHERE problem IS NOT NULL"
    ]
    if repeats:
        parts.append(
            f"SELECT line, '{table.file_key[-1]}', 'repeats the row of line ' || first FROM "
            f"(SELECT line, min(line) OVER (PARTITION BY {key}) AS first FROM {stage}) d WHERE line <> first"
        )
    if table.parents:
        col, parent = table.parents
        in_file = f" AND NOT EXISTS (SELECT FROM stage_{parent} p WHERE p.ref = s.{col})" if parent in staged else ""
        parts.append(
            f"SELECT line, '{col}', 'names no {parent[:-1]} of this tenant' FROM {stage} s "
            f"WHERE NOT EXISTS (SELECT FROM {parent} p WHERE p.tenant_id = :tenant_id AND p.ref = s.{col}){in_file}"
        )
    if table is STATEMENTS:
        parts.append(
            "SELECT line, 'period_start', 'overlaps the statement of line ' || before FROM "
            "(SELECT line, period_start, lag(period_end) OVER w AS previous_end, lag(line) OVER w AS before "
            " FROM stage_statements WINDOW w AS (PARTITION BY account_ref ORDER BY period_start)) o "
            "WHERE period_start <= previous_end"
        )
    query = Statement(" UNION ALL ".join(parts) + f" ORDER BY line, col LIMIT {MAX_ERRORS}")
    rows = await raw.fetch(query.sql, *query.args({"tenant_id": tenant}))
    return [f"line {r['line']}, column {r['col']}: {r['message']}" for r in rows]


async def load_csv(
    conn: AsyncConnection, tenant_slug: str, files: dict[str, Path], progress: Progress, *, force: bool = False
) -> ImportReport:
    """Load the files (by table name) inside the caller's transaction; raises ImportRejected naming
    every wrong row (up to MAX_ERRORS a file) and writes nothing then. The files of the tenant's last
    load, byte for byte, with nothing of the tenant's written since, are not loaded again (they would
    write nothing; app/data/bulk_loads.py) unless `force`."""
    tenant = await find_tenant(conn, tenant_slug)
    if tenant is None:
        raise ImportRejected(f"unknown tenant {tenant_slug!r}: create it first with `bill-assistant tenants create`")
    raw = await driver_of(conn)
    tables = [t for t in TABLES.values() if t.name in files]
    files_digest = bulk_loads.digest({t.name: files[t.name] for t in tables})
    if not force and (last := await bulk_loads.unchanged(raw, tenant, files_digest)) is not None:
        counts = {name: Counts(unchanged=n) for name, n in last.items()}
        return ImportReport(tenant=tenant_slug, tables=counts, same_as_last_load=True)
    rows = {table.name: await _stage(raw, table, files[table.name], progress) for table in tables}
    problems = []
    for table in tables:
        errors = []
        if table.same is not None:
            errors = await _repeats(raw, table)
            await _keep_what_differs(raw, table, tenant)
        errors = sorted(errors + await _errors(raw, table, tenant, set(files), repeats=table.same is None), key=_line)
        problems += [f"{files[table.name].name}: {e}" for e in errors[:MAX_ERRORS]]
    if problems:
        raise ImportRejected("\n".join(problems))
    report = ImportReport(tenant=tenant_slug)
    changed = []
    for table in tables:
        merge = Statement(table.merge())
        created, updated, _ = await raw.fetchrow(merge.sql, *merge.args({"tenant_id": tenant}))
        unchanged = rows[table.name] - created - updated
        report.tables[table.name] = Counts(created=created, updated=updated, unchanged=unchanged)
        if created or updated:
            changed.append(table.name)
            if table is not tables[-1]:  # the next table's merge joins this one: plan it with what is there now
                await raw.execute(f"ANALYZE {table.name}")
    if "statements" in files:
        touched = await raw.fetch(_TOUCHED.sql, *_TOUCHED.args({"tenant_id": tenant}))
        await check_no_overlap(conn, [r["id"] for r in touched])
    if changed:  # the statistics the answers' queries are planned with: the last table, the summaries
        await raw.execute(f"ANALYZE {changed[-1]}, statement_summaries")
    staged = {name: c.created + c.updated + c.unchanged for name, c in report.tables.items()}
    await bulk_loads.record(raw, tenant, files_digest, staged)
    return report
