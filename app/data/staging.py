"""Rows staged in a temporary table by COPY and merged by ref into their table, inside the caller's
transaction: the one road of both importers (app/data/csv_import.py stages CSV files, checked in SQL;
app/data/importer.py stages a JSON file's rows, checked in Python as it was decoded)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import asyncpg

from app.data.csv_checks import has_rows
from app.data.csv_format import STATEMENTS, Table
from app.data.sql import Statement
from app.errors import ImportRejected

# Before a statement's lines merge, their summaries are left to the loader; after, refreshed once.
_BEFORE_LINES = (
    "SELECT set_config('bill_assistant.lines_merged', 'on', true);"
    " CREATE TEMP TABLE merged_spans (spans jsonb) ON COMMIT DROP"
)
_AFTER_LINES = (
    "SELECT set_config('bill_assistant.lines_merged', 'off', true);"
    " SELECT statement_lines_changed(spans) FROM merged_spans; DROP TABLE merged_spans"
)


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


_TENANT = Statement("SELECT id FROM tenants WHERE slug = :slug")


async def tenant_id(raw: asyncpg.Connection, slug: str) -> int:
    """The tenant a load writes for; ImportRejected when there is none."""
    tenant: int | None = await raw.fetchval(_TENANT.sql, *_TENANT.args({"slug": slug}))
    if tenant is None:
        raise ImportRejected(f"unknown tenant {slug!r}: create it first with `bill-assistant tenants create`")
    return tenant


# A load's sorts and hashes over a whole file (the repeated keys, the lines' spans) in memory: under
# the default 4 MB a 400,000-line file's spill to disk (docs/benchmarks.md).
LOAD_WORK_MEM = "64MB"


async def load_memory(raw: asyncpg.Connection) -> None:
    """LOAD_WORK_MEM for the rest of the load's transaction (a load is one connection at a time)."""
    await raw.execute(f"SELECT set_config('work_mem', '{LOAD_WORK_MEM}', true)")


# Statements of the tenant that have no summary: those a load inserted and gave no line.
_UNSUMMARIZED = Statement(
    "SELECT refresh_statement_summaries(ARRAY(SELECT s.id FROM statements s WHERE s.tenant_id = :tenant_id"
    " AND NOT EXISTS (SELECT FROM statement_summaries ss WHERE ss.statement_id = s.id)))"
)


@asynccontextmanager
async def statements_summarized_once(raw: asyncpg.Connection, tenant: int) -> AsyncIterator[bool]:
    """The loads' merges inside: a new statement is summarized once, with its lines, not first empty
    and then again (migration 0026). The statements trigger leaves new statements alone meanwhile,
    the lines' trigger (or statement_lines_changed) summarizes those that get lines, and those that
    got none are summarized on the way out. Yields whether the tenant has no statement yet: then
    every statement is this load's, and its lines may be written as `lines_of_new_statements`."""
    first = not await has_rows(raw, STATEMENTS, tenant)
    await raw.execute("SELECT set_config('bill_assistant.summaries_deferred', 'on', true)")
    yield first
    await raw.execute("SELECT set_config('bill_assistant.summaries_deferred', 'off', true)")
    await raw.execute(_UNSUMMARIZED.sql, *_UNSUMMARIZED.args({"tenant_id": tenant}))


@asynccontextmanager
async def lines_of_new_statements(raw: asyncpg.Connection) -> AsyncIterator[None]:
    """Inside `statements_summarized_once` where every statement is the load's own, lines written
    inside: the lines' trigger leaves their statements alone (migration 0020's guard), and all of
    them are summarized on the way out, as statements without a summary. A tenant's first load skips
    the trigger's spans (which statements each line falls in, whether to bump them): with every
    statement new, there is nothing to bump."""
    await raw.execute("SELECT set_config('bill_assistant.lines_merged', 'on', true)")
    yield
    await raw.execute("SELECT set_config('bill_assistant.lines_merged', 'off', true)")


def text_field(value: str | None) -> str:
    """A value as COPY's text format writes it (tab-separated; a value holds no control character:
    app/data/import_format.py)."""
    return "\\N" if value is None else value.replace("\\", "\\\\")


async def stage_rows(raw: asyncpg.Connection, table: Table, rows: Iterable[str]) -> int:
    """Rows (COPY text lines, the table's columns in order) in stage_<table>, numbered from 2 as a
    file's lines would be, analyzed; their count."""
    stage = f"stage_{table.name}"
    cols = ", ".join(f"{c} text" for c in table.columns)
    await raw.execute(
        f"DROP TABLE IF EXISTS {stage}; CREATE TEMP TABLE {stage} "
        f"(line bigint GENERATED ALWAYS AS IDENTITY (START 2), {cols}) ON COMMIT DROP"
    )
    data = "".join(f"{row}\n" for row in rows).encode()
    copied = await raw.copy_to_table(stage, source=_once(data), columns=list(table.columns), format="text")
    await raw.execute(f"ANALYZE {stage}")
    return int(copied.split()[-1])


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def merge(raw: asyncpg.Connection, table: Table, tenant: int) -> tuple[int, int]:
    """The table's staged rows merged: (created, updated). A first load (nothing of the tenant's in
    the table) inserts them all, and its trigger refreshes the summaries once. Otherwise a
    statement's lines that may update stored ones refresh the summaries of their statements once,
    after the merge (migration 0020), not once for the updates and again for the inserts."""
    if not await has_rows(raw, table, tenant):
        insert = Statement(table.insert())
        status = await raw.execute(insert.sql, *insert.args({"tenant_id": tenant}))
        return int(status.split()[-1]), 0  # "INSERT 0 <rows>"
    statement = Statement(table.merge())
    if table.lines:
        await raw.execute(_BEFORE_LINES)
    created, updated, _ = await raw.fetchrow(statement.sql, *statement.args({"tenant_id": tenant}))
    if table.lines:
        await raw.execute(_AFTER_LINES)
    return created, updated
