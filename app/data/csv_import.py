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
from dataclasses import dataclass
from pathlib import Path

import asyncpg
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.data.database import driver_of
from app.data.importer import Counts, ImportReport, check_no_overlap
from app.data.sql import Statement
from app.data.tenants import tenant_id as find_tenant
from app.domain.vocabulary import LOCALES, TRANSACTION_KINDS
from app.errors import ImportRejected

MAX_ERRORS = 20
CHUNK = 1 << 20  # bytes per COPY message

_CONTROL = r"[\x01-\x1f\x7f-\x9f]"  # NUL never reaches here: COPY refuses it as text
_EDGE = r"[^\s\x01-\x1f\x7f-\x9f]"
_REF = rf"^{_EDGE}([^\x01-\x1f\x7f-\x9f]*{_EDGE})?$"
_AMOUNT = r"^-?[0-9]{1,12}(\.[0-9]{1,2})?$"
_ZERO = r"^-?0+(\.0+)?$"
_ISO = "'^[0-9]{4}-[0-9]{2}-[0-9]{2}$'"


def _in(values: tuple[str, ...]) -> str:
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"


def _date_ok(col: str) -> str:
    """A date from 1970-01-01 to 2099-12-31, written YYYY-MM-DD, checked without casting (a bad cast
    would abort the statement instead of naming the line)."""
    y, m, d = (f"CAST(substr({col}, {a}, {n}) AS int)" for a, n in ((1, 4), (6, 2), (9, 2)))
    return (
        rf"CASE WHEN {col} !~ '^[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}$' THEN false"
        f" WHEN {y} NOT BETWEEN 1970 AND 2099 OR {m} NOT BETWEEN 1 AND 12 THEN false"
        f" ELSE {d} BETWEEN 1 AND EXTRACT(day FROM make_date({y}, {m}, 1) + interval '1 month - 1 day') END"
    )


def _text(col: str, longest: int, required: bool = False) -> list[tuple[str, str, str]]:
    checks = [(col, f"more than {longest} characters", f"char_length({col}) > {longest}")]
    checks.append((col, "contains a control character", f"{col} ~ '{_CONTROL}'"))
    if required:
        checks.insert(0, (col, "must not be empty", f"{col} IS NULL OR {col} = ''"))
    return checks


def _ref(col: str) -> list[tuple[str, str, str]]:
    return [
        (col, "must not be empty", f"{col} IS NULL"),
        (
            col,
            "must be 1-64 characters, no blank at either end, no control character",
            f"char_length({col}) > 64 OR {col} !~ '{_REF}'",
        ),
    ]


def _date(col: str) -> list[tuple[str, str, str]]:
    return [(col, "must be a date YYYY-MM-DD from 1970-01-01 to 2099-12-31", f"{col} IS NULL OR NOT ({_date_ok(col)})")]


def _amount(col: str) -> list[tuple[str, str, str]]:
    return [
        (col, "must be an amount like 12.50 (up to 12 digits, 2 decimals)", f"{col} IS NULL OR {col} !~ '{_AMOUNT}'")
    ]


@dataclass(frozen=True)
class Table:
    """One CSV file: its columns, the checks of a row on its own (column, message, SQL that is true
    when the row is wrong), and its merge: `source` selects the table's columns from the staged rows
    (:tenant_id the tenant), matched on `keys` (the file's own key is `file_key`), written in `values`."""

    name: str
    columns: tuple[str, ...]
    checks: list[tuple[str, str, str]]
    file_key: tuple[str, ...]
    source: str
    keys: tuple[str, ...]
    values: tuple[str, ...]
    parents: tuple[str, str] | None = None  # (column, table): the stored or staged parent a row names

    def merge(self) -> str:
        """Changed rows updated, new ones inserted, identical ones left alone (no new row version,
        no trigger work); counts created, updated, staged. Cheaper than INSERT ... ON CONFLICT,
        which tries every row's insert first."""
        match = " AND ".join(f"t.{k} = src.{k}" for k in self.keys)
        columns = ", ".join((*self.keys, *self.values))
        return f"""WITH src AS ({self.source}),
updated AS (
    UPDATE {self.name} t SET {", ".join(f"{v} = src.{v}" for v in self.values)} FROM src
    WHERE {match} AND ({", ".join(f"t.{v}" for v in self.values)}) IS DISTINCT FROM
          ({", ".join(f"src.{v}" for v in self.values)})
    RETURNING 1
),
created AS (
    INSERT INTO {self.name} ({columns}) SELECT {columns} FROM src
    WHERE NOT EXISTS (SELECT FROM {self.name} t WHERE {match})
    RETURNING 1
)
SELECT (SELECT count(*) FROM created), (SELECT count(*) FROM updated), (SELECT count(*) FROM src)"""


CUSTOMERS = Table(
    "customers",
    ("ref", "name", "locale"),
    [
        *_ref("ref"),
        *_text("name", 200, required=True),
        ("locale", f"must be one of {', '.join(LOCALES)}", f"locale IS NULL OR locale NOT IN {_in(LOCALES)}"),
    ],
    ("ref",),
    "SELECT CAST(:tenant_id AS bigint) AS tenant_id, ref, name, locale FROM stage_customers",
    ("tenant_id", "ref"),
    ("name", "locale"),
)
ACCOUNTS = Table(
    "accounts",
    ("ref", "customer_ref", "kind", "currency", "masked_number", "opening_balance"),
    [
        *_ref("ref"),
        *_ref("customer_ref"),
        *_text("kind", 32, required=True),
        ("currency", "must be three capital letters", "currency IS NULL OR currency !~ '^[A-Z]{3}$'"),
        *_text("masked_number", 32, required=True),
        *_amount("opening_balance"),
    ],
    ("ref",),
    """SELECT c.tenant_id, s.ref, c.id AS customer_id, s.kind, s.currency, s.masked_number,
              CAST(s.opening_balance AS numeric) AS opening_balance
       FROM stage_accounts s JOIN customers c ON c.tenant_id = :tenant_id AND c.ref = s.customer_ref""",
    ("tenant_id", "ref"),
    ("customer_id", "kind", "currency", "masked_number", "opening_balance"),
    parents=("customer_ref", "customers"),
)
STATEMENTS = Table(
    "statements",
    ("account_ref", "period_start", "period_end", "due_date", "minimum_due"),
    [
        *_ref("account_ref"),
        *_date("period_start"),
        *_date("period_end"),
        *_date("due_date"),
        *_amount("minimum_due"),
        ("minimum_due", "must not be negative", f"minimum_due ~ '^-' AND minimum_due !~ '{_ZERO}'"),
        # Dates written YYYY-MM-DD compare as text.
        (
            "period_start",
            "is after period_end",
            f"period_start ~ {_ISO} AND period_end ~ {_ISO} AND period_start > period_end",
        ),
        ("due_date", "is before period_end", f"due_date ~ {_ISO} AND period_end ~ {_ISO} AND due_date < period_end"),
    ],
    ("account_ref", "period_end"),
    """SELECT a.tenant_id, a.id AS account_id, CAST(s.period_end AS date) AS period_end,
              CAST(s.period_start AS date) AS period_start, CAST(s.due_date AS date) AS due_date,
              CAST(s.minimum_due AS numeric) AS minimum_due
       FROM stage_statements s JOIN accounts a ON a.tenant_id = :tenant_id AND a.ref = s.account_ref""",
    ("tenant_id", "account_id", "period_end"),
    ("period_start", "due_date", "minimum_due"),
    parents=("account_ref", "accounts"),
)
TRANSACTIONS = Table(
    "transactions",
    ("account_ref", "ref", "posted_on", "kind", "amount", "merchant", "category", "description"),
    [
        *_ref("account_ref"),
        *_ref("ref"),
        *_date("posted_on"),
        (
            "kind",
            f"must be one of {', '.join(TRANSACTION_KINDS)}",
            f"kind IS NULL OR kind NOT IN {_in(TRANSACTION_KINDS)}",
        ),
        *_amount("amount"),
        ("amount", "an adjustment must not be zero", f"kind = 'adjustment' AND amount ~ '{_ZERO}'"),
        (
            "amount",
            "must be positive (only adjustments are signed)",
            f"kind <> 'adjustment' AND (amount ~ '^-' OR amount ~ '{_ZERO}')",
        ),
        *_text("merchant", 200),
        *_text("category", 64),
        *_text("description", 500),
    ],
    ("account_ref", "ref"),
    """SELECT a.tenant_id, a.id AS account_id, s.ref, CAST(s.posted_on AS date) AS posted_on, s.kind,
              CAST(s.amount AS numeric) AS amount, s.merchant, s.category, s.description
       FROM stage_transactions s JOIN accounts a ON a.tenant_id = :tenant_id AND a.ref = s.account_ref""",
    ("tenant_id", "account_id", "ref"),
    ("posted_on", "kind", "amount", "merchant", "category", "description"),
    parents=("account_ref", "accounts"),
)
TABLES = {t.name: t for t in (CUSTOMERS, ACCOUNTS, STATEMENTS, TRANSACTIONS)}  # in the order they load
_TOUCHED = Statement(
    "SELECT DISTINCT a.id FROM stage_statements s JOIN accounts a ON a.tenant_id = :tenant_id AND a.ref = s.account_ref"
)

Progress = Callable[[str, bytes], None]  # each chunk of a file as it is sent (the file's table name)


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


async def _stage(raw: asyncpg.Connection, table: Table, path: Path, progress: Progress) -> None:
    columns = _header(path, table)
    cols = ", ".join(f"{c} text" for c in table.columns)
    # line: the row's line in the file (rows arrive in order; the header is line 1).
    await raw.execute(
        f"CREATE TEMP TABLE stage_{table.name} (line bigint GENERATED ALWAYS AS IDENTITY (START 2), {cols}) "
        "ON COMMIT DROP"
    )
    try:
        await raw.copy_to_table(
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


async def _errors(raw: asyncpg.Connection, table: Table, tenant: int, staged: set[str]) -> list[str]:
    stage = f"stage_{table.name}"
    key = ", ".join(table.file_key)
    # A row's first failed check of its own, in one scan of the file (CASE stops at the first).
    first = " ".join(f"WHEN {condition} THEN '{col}|{message}'" for col, message, condition in table.checks)
    parts = [
        "SELECT line, split_part(problem, '|', 1) AS col, split_part(problem, '|', 2) AS message FROM "
        f"(SELECT line, CASE {first} END AS problem FROM {stage}) p WHERE problem IS NOT NULL"
    ]
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


async def load_csv(conn: AsyncConnection, tenant_slug: str, files: dict[str, Path], progress: Progress) -> ImportReport:
    """Load the files (by table name) inside the caller's transaction; raises ImportRejected naming
    every wrong row (up to MAX_ERRORS a file) and writes nothing then."""
    tenant = await find_tenant(conn, tenant_slug)
    if tenant is None:
        raise ImportRejected(f"unknown tenant {tenant_slug!r}: create it first with `bill-assistant tenants create`")
    raw = await driver_of(conn)
    tables = [t for t in TABLES.values() if t.name in files]
    for table in tables:
        await _stage(raw, table, files[table.name], progress)
    problems = []
    for table in tables:
        errors = await _errors(raw, table, tenant, set(files))
        problems += [f"{files[table.name].name}: {e}" for e in errors]
    if problems:
        raise ImportRejected("\n".join(problems))
    report = ImportReport(tenant=tenant_slug)
    for table in tables:
        merge = Statement(table.merge())
        created, updated, staged = await raw.fetchrow(merge.sql, *merge.args({"tenant_id": tenant}))
        report.tables[table.name] = Counts(created=created, updated=updated, unchanged=staged - created - updated)
        if created or updated:  # the next table's merge joins this one: plan it with what is there now
            await raw.execute(f"ANALYZE {table.name}")
    if "statements" in files:
        touched = await raw.fetch(_TOUCHED.sql, *_TOUCHED.args({"tenant_id": tenant}))
        await check_no_overlap(conn, [r["id"] for r in touched])
    await conn.execute(text("ANALYZE customers, accounts, statements, transactions, statement_summaries"))
    return report
