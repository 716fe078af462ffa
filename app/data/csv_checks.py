"""The checks of a staged CSV file (app/data/csv_import.py) that read more than one row: the whole
file's repeated keys, the parents a row names, overlapping statements; and the staged rows that are
identical to stored ones, set aside before the checks and the merge; and a file's statements against
the stored ones (both importers)."""

from __future__ import annotations

import re

import asyncpg

from app.data.csv_format import STATEMENTS, Table
from app.data.sql import Statement
from app.errors import ImportRejected

MAX_ERRORS = 20


def by_line(error: str) -> tuple[int, str]:
    """An error's place, to order the errors of one file by line ("line 12, column ref: ...")."""
    number = re.match(r"line (\d+)", error)
    return (int(number[1]) if number else 0, error)


async def has_rows(raw: asyncpg.Connection, table: Table, tenant: int) -> bool:
    """Whether the tenant has any row stored in the table. An account's rows are asked for account by
    account, one index probe each: transactions have no index on the tenant, and a first load would
    scan every other tenant's lines (a plain join is planned as that scan too)."""
    stored = f"{table.name} WHERE tenant_id = :tenant_id"
    if "account_id" in table.keys:
        lateral = f"(SELECT FROM {table.name} t WHERE t.account_id = a.id LIMIT 1) t"
        stored = f"accounts a CROSS JOIN LATERAL {lateral} WHERE a.tenant_id = :tenant_id"
    any_stored = Statement(f"SELECT EXISTS (SELECT FROM {stored})")
    return bool(await raw.fetchval(any_stored.sql, *any_stored.args({"tenant_id": tenant})))


async def keep_what_differs(raw: asyncpg.Connection, table: Table, tenant: int) -> None:
    """Drop the staged rows identical, as text, to a stored row of the tenant: they were checked
    when they were loaded and would write nothing. What is left (a nightly file's changed and new
    lines) is all the checks and the merge read. A row written otherwise (12.5 for 12.50) stays,
    and merges as unchanged. Only when the tenant has rows stored (a first load has nothing to
    compare with)."""
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


def _repeated(table: Table) -> str:
    """The staged rows that repeat an earlier row's key (line, first): a hash aggregate of the keys,
    cheaper than sorting the rows for a window (a nightly's 8,000 sent lines: 8 -> 3 ms)."""
    key = ", ".join(table.file_key)
    return (
        f"SELECT s.line, d.first FROM stage_{table.name} s JOIN (SELECT {key}, min(line) AS first FROM "
        f"stage_{table.name} GROUP BY {key} HAVING count(*) > 1) d USING ({key}) WHERE s.line <> d.first"
    )


async def repeats(raw: asyncpg.Connection, table: Table) -> list[str]:
    """Rows of the whole file that repeat an earlier row's key: asked before the file is narrowed."""
    rows = await raw.fetch(f"{_repeated(table)} ORDER BY s.line LIMIT {MAX_ERRORS}")
    return [f"line {r['line']}, column {table.file_key[-1]}: repeats the row of line {r['first']}" for r in rows]


async def errors(
    raw: asyncpg.Connection,
    table: Table,
    tenant: int,
    staged: set[str],
    *,
    repeats: bool = True,
    screened: bool = False,
) -> list[str]:
    """Up to MAX_ERRORS wrong rows of the staged file. `screened`: every line matched the table's
    plain patterns (app/data/csv_lines.py `Screen`), so of a row's own checks only those across
    columns that the patterns do not cover are asked."""
    stage = f"stage_{table.name}"
    parts = []
    if checks := table.after_screen if screened else table.checks:
        # A row's first failed check of its own, in one scan of the file (CASE stops at the first).
        first = " ".join(f"WHEN {condition} THEN '{col}|{message}'" for col, message, condition in checks)
        parts.append(
            "SELECT line, split_part(problem, '|', 1) AS col, split_part(problem, '|', 2) AS message FROM "
            f"(SELECT line, CASE {first} END AS problem FROM {stage}) p WHERE problem IS NOT NULL"
        )
    if repeats:
        parts.append(
            f"SELECT line, '{table.file_key[-1]}', 'repeats the row of line ' || first FROM ({_repeated(table)}) d"
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
    if not parts:
        return []
    union = " UNION ALL ".join(parts)
    query = Statement(f"SELECT * FROM ({union}) e (line, col, message) ORDER BY line, col LIMIT {MAX_ERRORS}")
    rows = await raw.fetch(query.sql, *query.args({"tenant_id": tenant}))
    return [f"line {r['line']}, column {r['col']}: {r['message']}" for r in rows]


_OVERLAP = Statement(
    """SELECT a.ref, s1.period_end, s2.period_end FROM statements s1
       JOIN statements s2 ON s2.account_id = s1.account_id AND s2.id > s1.id
       JOIN accounts a ON a.id = s1.account_id
       WHERE s1.account_id = ANY(:account_ids) AND s1.period_start <= s2.period_end AND s2.period_start <= s1.period_end
       LIMIT 1"""
)


async def check_no_overlap(raw: asyncpg.Connection, account_ids: list[int]) -> None:
    """A file's statements are checked among themselves; this checks them against stored ones."""
    row = await raw.fetchrow(_OVERLAP.sql, *_OVERLAP.args({"account_ids": account_ids}))
    if row is not None:
        raise ImportRejected(f"account {row[0]}: the statement ending {row[1]} overlaps the one ending {row[2]}")
