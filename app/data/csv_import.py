"""Bulk loads from CSV: each file streamed through COPY into a staging table, checked in SQL with the
JSON importer's rules, then merged by ref inside the caller's transaction (all or nothing).

Files are UTF-8 with a header row naming their columns (any order; README "Bulk loads"). Postgres
reads the CSV, streamed a chunk at a time, so memory stays bounded whatever the file's size; a
tenant's first load of its lines skips the staging table (app/data/csv_direct.py). A rejected
file names its file, line and column, for up to MAX_ERRORS rows. As in app/data/importer.py, a row
identical to the stored one is not written (no new row version, no data-version bump), so an
unchanged re-load writes nothing.

A nightly file is mostly the last load's lines: while nothing of the tenant's has been written since
that load, its transaction lines are compared with the last load's by digest as the file is read,
and only the others (changed and new) are sent, checked and merged (`_stage_changed`). A file that
fails any check there is loaded again in full, so a rejection names the same lines as ever.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import nullcontext
from functools import partial
from pathlib import Path

import asyncpg

from app.data import bulk_loads
from app.data.csv_checks import MAX_ERRORS, by_line, check_no_overlap, errors, has_rows, keep_what_differs, repeats
from app.data.csv_direct import NotDirect, copy_in
from app.data.csv_format import CHUNK, TABLES, Table
from app.data.csv_lines import Screen, Sieve, first_line, last_digests, repeated_keys, unchanged_file
from app.data.sql import Statement
from app.data.staging import (
    Counts,
    ImportReport,
    lines_of_new_statements,
    load_memory,
    merge,
    statements_summarized_once,
    tenant_id,
)
from app.errors import ImportRejected

ANALYZE_SHARE = 0.1  # a table's statistics are refreshed after a change above this share of its file

_TOUCHED = Statement(
    "SELECT DISTINCT a.id FROM stage_statements s JOIN accounts a ON a.tenant_id = :tenant_id AND a.ref = s.account_ref"
)

Progress = Callable[[str, int, int], None]  # a file's table name, and the bytes and rows of it just read


async def _chunks(path: Path, name: str, progress: Progress, sieve: Sieve) -> AsyncIterator[bytes]:
    """The file's chunks through the sieve, each counted (its rows: the sieve's records)."""
    with path.open("rb") as f:
        while True:
            chunk, line = f.read(CHUNK), sieve.line
            sent = sieve.feed(chunk)
            progress(name, len(chunk), sieve.line - line)
            if sent:
                yield sent
            if not chunk:
                return


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


async def _stage(
    raw: asyncpg.Connection, table: Table, path: Path, progress: Progress, *, screen: bool
) -> tuple[int, Sieve]:
    """The file in a temporary table, its rows counted, and the sieve that digested them (sending
    them all) and, with `screen`, screened them (`Table.plain`)."""
    columns = _header(path, table)
    sieve = Sieve(None, Screen(table.plain, columns) if screen and table.plain else None)
    cols = ", ".join(f"{c} text" for c in table.columns)
    # line: the row's line in the file (rows arrive in order; the header is line 1).
    await raw.execute(
        f"CREATE TEMP TABLE stage_{table.name} (line bigint GENERATED ALWAYS AS IDENTITY (START 2), {cols}) "
        "ON COMMIT DROP"
    )
    try:
        copied = await raw.copy_to_table(
            f"stage_{table.name}",
            source=_chunks(path, table.name, progress, sieve),
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
    return int(copied.split()[-1]), sieve  # "COPY <rows>"


class _NotNarrowed(Exception):
    """A file staged with its changed lines only that must be loaded in full, so that its rejection
    names the same lines as ever: one of them fails a check, or repeats the key of another line."""


async def _stage_changed(
    raw: asyncpg.Connection,
    table: Table,
    path: Path,
    remembered: bytes,
    tenant: int,
    context: tuple[Progress, set[str]],
) -> tuple[Sieve, Awaitable[bool]] | None:
    """Only the lines not among the last load's (`remembered`) in the staging table, numbered by their
    line, and checked (of a row's own checks, as for a first load, only those the screen of the sent
    lines leaves), with whether a line of the whole file repeats one of their keys: a pass over the
    file, asked in a thread while Postgres merges (awaited before the load is recorded). None, with
    nothing staged, when the header differs from the last load's; _NotNarrowed when a sent line fails
    a check."""
    progress, staged = context
    last = last_digests(remembered, first_line(path))
    if last is None:
        return None
    columns = _header(path, table)
    stage, sieve = f"stage_{table.name}", Sieve(last, Screen(table.plain, columns) if table.plain else None)
    # Analyzed on what the checks and the merge join on, from a 3,000-row sample: plenty to plan by (9 -> 3 ms).
    sampled = ", ".join(f"ALTER COLUMN {k} SET STATISTICS 10" for k in table.file_key)
    await raw.execute(
        f"CREATE TEMP TABLE {stage} (line bigint, {', '.join(f'{c} text' for c in table.columns)}) ON COMMIT DROP;"
        f" ALTER TABLE {stage} {sampled}"
    )
    try:
        await raw.copy_to_table(
            stage, source=_chunks(path, table.name, progress, sieve), columns=["line", *columns], format="csv"
        )
    except asyncpg.DataError:
        raise _NotNarrowed from None
    await raw.execute(f"ANALYZE {stage} ({', '.join(table.file_key)})")
    if await errors(raw, table, tenant, staged, screened=sieve.screen is not None and sieve.screen.clean):
        raise _NotNarrowed
    keys = ", ".join(table.file_key)
    sent = {tuple(map(str.encode, r[1:])): r[0] for r in await raw.fetch(f"SELECT line, {keys} FROM {stage}")}
    positions = tuple(columns.index(k) for k in table.file_key)
    repeated = asyncio.to_thread(repeated_keys, path, positions, len(columns), sent)
    return sieve, asyncio.ensure_future(repeated)


async def _insert(raw: asyncpg.Connection, table: Table, tenant: int, path: Path) -> tuple[int, int]:
    """A first load's merge, its file's repeated keys not looked for beforehand (a pass over the whole
    file): the table's unique key refuses them, and only then are they named, as the checks name them."""
    await raw.execute("SAVEPOINT first_load")
    try:
        return await merge(raw, table, tenant)
    except asyncpg.UniqueViolationError:
        await raw.execute("ROLLBACK TO SAVEPOINT first_load")
        if found := await repeats(raw, table):
            raise ImportRejected("\n".join(f"{path.name}: {e}" for e in found)) from None
        raise  # not the file's own repeat: another writer's row


async def load_csv(
    raw: asyncpg.Connection,
    tenant_slug: str,
    files: dict[str, Path],
    progress: Progress,
    *,
    force: bool = False,
    again: Callable[[], None] = lambda: None,
) -> ImportReport:
    """Load the files (by table name) inside the caller's transaction, on the driver's own connection
    (a nightly command starts without SQLAlchemy: app/data/connecting.py); raises ImportRejected naming
    every wrong row (up to MAX_ERRORS a file) and writes nothing then. The files of the tenant's last
    load, byte for byte, with nothing of the tenant's written since, are not loaded again (they would
    write nothing; app/data/bulk_loads.py) unless `force`. `again`: called when the load starts over
    and its files are sent again from their first line."""
    tenant = await tenant_id(raw, tenant_slug)
    await bulk_loads.lock(raw, tenant)
    await load_memory(raw)
    tables = [t for t in TABLES.values() if t.name in files]
    files_digest = bulk_loads.digest({t.name: files[t.name] for t in tables})
    if not force and (last := await bulk_loads.unchanged(raw, tenant, files_digest)) is not None:
        counts = {name: Counts(unchanged=n) for name, n in last.items()}
        return ImportReport(tenant=tenant_slug, tables=counts, same_as_last_load=True)
    remembered = {} if force else await bulk_loads.last_lines(raw, tenant)
    try:
        # A savepoint: a file that cannot be narrowed, or copied straight in, starts the load again.
        async with raw.transaction():
            return await _load(raw, (tenant, tenant_slug), files, progress, remembered, files_digest)
    except (_NotNarrowed, NotDirect):
        again()
        return await _load(raw, (tenant, tenant_slug), files, progress, {}, files_digest, staged_only=True)


async def _load(
    raw: asyncpg.Connection,
    tenant_of: tuple[int, str],
    files: dict[str, Path],
    progress: Progress,
    remembered: dict[str, bytes],
    files_digest: bytes,
    *,
    staged_only: bool = False,
) -> ImportReport:
    """`load_csv` once the tenant's lock is held: the files staged (narrowed to their changed lines
    where the last load's are `remembered`), checked, merged and recorded; a first load of the lines
    copied straight in (app/data/csv_direct.py) unless `staged_only`."""
    (tenant, tenant_slug), tables = tenant_of, [t for t in TABLES.values() if t.name in files]
    rows: dict[str, int] = {}
    sieves: dict[str, Sieve] = {}
    staged: set[str] = set()  # the tables with a staging table
    narrowed: set[str] = set()  # those staged with their changed lines only, and checked already
    repeated: list[Awaitable[bool]] = []  # whether a narrowed file repeats a key (`_stage_changed`)
    context = (progress, staged)
    # The tenant's first load of a large table: screened as it is sent (`_stage`); that of the
    # transactions copied straight in (`direct`), or when staged, its repeated keys left to the
    # table's unique key (`_insert`).
    empty = {t.name for t in tables if t.plain and not await has_rows(raw, t, tenant)}
    first = {t.name for t in tables if t.same is not None and t.name in empty}
    direct = set() if staged_only else first
    for table in tables:
        name, path, known = table.name, files[table.name], remembered.get(table.name)
        if name in direct:
            continue  # read once its parents are merged
        sieve = None
        if known is not None and table.same is None:  # a small table: left alone when it is as last loaded
            sieve = unchanged_file(path, known, partial(progress, name))
        elif known is not None and (changed_lines := await _stage_changed(raw, table, path, known, tenant, context)):
            sieve, verdict = changed_lines
            narrowed.add(name)
            repeated.append(verdict)
        if sieve is None or name in narrowed:
            staged.add(name)
        if sieve is None:
            rows[name], sieve = await _stage(raw, table, path, progress, screen=name in empty)
        else:
            rows[name] = sieve.line - 1
        sieves[name] = sieve
    problems = []
    for table in (t for t in tables if t.name in staged - narrowed):
        found = []
        if table.same is not None and table.name not in first:
            found = await repeats(raw, table)
            await keep_what_differs(raw, table, tenant)
        screen = sieves[table.name].screen
        screened = screen is not None and screen.clean
        found += await errors(raw, table, tenant, staged, repeats=table.same is None, screened=screened)
        if found and table.name in first:  # a rejected file names its repeated keys as ever
            found += await repeats(raw, table)
        problems += [f"{files[table.name].name}: {e}" for e in sorted(found, key=by_line)[:MAX_ERRORS]]
    if problems and direct:
        raise NotDirect  # staged too, so that their errors are named with the others
    if problems:
        raise ImportRejected("\n".join(problems))
    report = ImportReport(tenant=tenant_slug)
    changed = []
    # New statements are summarized once, with their lines (none are new unless the file is loaded).
    summarized = statements_summarized_once(raw, tenant) if "statements" in staged else nullcontext(False)
    async with summarized as new_statements:
        for table in tables:
            if table.name in direct:
                path = files[table.name]
                async with lines_of_new_statements(raw) if new_statements else nullcontext():
                    created, sieves[table.name] = await copy_in(
                        raw, table, tenant, path, _header(path, table), partial(progress, table.name)
                    )
                updated, rows[table.name] = 0, created
            elif table.name in first:
                created, updated = await _insert(raw, table, tenant, files[table.name])
            else:
                created, updated = await merge(raw, table, tenant) if table.name in staged else (0, 0)
            unchanged = rows[table.name] - created - updated
            report.tables[table.name] = Counts(created=created, updated=updated, unchanged=unchanged)
            # The next table's merge joins this one: plan it with what is there now. A change of under
            # ANALYZE_SHARE of the file leaves the statistics as they were (autovacuum sees to it later).
            if created + updated > ANALYZE_SHARE * rows[table.name]:
                changed.append(table.name)
                if table is not tables[-1]:
                    await raw.execute(f"ANALYZE {table.name}")
    if "statements" in staged:
        touched = await raw.fetch(_TOUCHED.sql, *_TOUCHED.args({"tenant_id": tenant}))
        await check_no_overlap(raw, [r["id"] for r in touched])
    if changed:  # the statistics the answers' queries are planned with: the last table, the summaries
        await raw.execute(f"ANALYZE {changed[-1]}, statement_summaries")
    for verdict in repeated:
        if await verdict:
            raise _NotNarrowed
    lines = {name: digests for name, sieve in sieves.items() if (digests := sieve.remembered()) is not None}
    await bulk_loads.record(raw, tenant, files_digest, rows, lines)
    return report
