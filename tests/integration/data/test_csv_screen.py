"""A first load's screen (app/data/csv_lines.py `Screen`) against the SQL checks it stands in for: a
line the screen lets through never fails a check of its own in Postgres, over single-column changes
of a valid line and random mixes of valid, borderline and wrong values; and the lines real exports
hold (Chinese merchants, the 31st, a leap day) go through, so a first load skips the SQL checks."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import asyncpg
from sqlalchemy.ext.asyncio import AsyncEngine

from app.data.connecting import connect
from app.data.csv_format import STATEMENTS, TRANSACTIONS, Table
from app.data.csv_import import load_csv
from app.data.csv_lines import Screen

REFS = ["T1", "ACC-0000001", "a", "x" * 64, "x" * 65, " T1", "T1 ", "T 1", "T\x01", "T.", "_T", "T_", "交易1",
        "Ünïcode", "T\u00a0", "\u3000T", "T\u0085", "١٢", "", "-", "T\x7f", "T\x9f", "T\u2028"]  # fmt: skip
DATES = ["2026-01-31", "2026-02-29", "2028-02-29", "2100-02-29", "2000-02-29", "1900-02-29", "1969-12-31",
         "1970-01-01", "2099-12-31", "2026-04-31", "2026-13-01", "2026-00-10", "2026-1-05", "26-01-05",
         "2026-01-05 ", "２０２６-01-05", "2026-06-30", "2026-02-30", "2026/01/05", "", "2026-01-00"]  # fmt: skip
AMOUNTS = ["12.50", "0.5", "0.05", "0.00", "0", "-12.50", "-0.00", "12.345", "1234567890123", "123456789012",
           "123456789012.99", "012.50", "+12.50", " 12.50", "12.", ".5", "1e3", "١٢.٥٠", "00.01", "0.0"]  # fmt: skip
TEXTS = ["", "Netflix", "x" * 200, "x" * 201, "x" * 64, "x" * 65, "x" * 500, "x" * 501, "咖啡店", "tab\there",
         "del\x7f", "c1\x85", "space ", " lead", "nbsp\u00a0", "\u3000"]  # fmt: skip
KINDS = ["purchase", "refund", "fee", "interest", "payment", "adjustment", "Purchase", "", "purchase "]
VALUES = {
    "account_ref": REFS,
    "ref": REFS,
    "posted_on": DATES,
    "period_start": DATES,
    "period_end": DATES,
    "due_date": DATES,
    "kind": KINDS,
    "amount": AMOUNTS,
    "minimum_due": AMOUNTS,
    "merchant": TEXTS,
    "category": TEXTS,
    "description": TEXTS,
}
VALID = {
    TRANSACTIONS.name: ["ACC-1", "T1", "2026-03-10", "purchase", "12.50", "FreshMart", "groceries", "Weekly shop"],
    STATEMENTS.name: ["ACC-1", "2026-03-01", "2026-03-31", "2026-04-25", "25.00"],
}


def _lines(table: Table, count: int, seed: int) -> list[list[str]]:
    """A valid line changed in one column with every candidate value, then `count` random mixes."""
    rng, valid = random.Random(seed), VALID[table.name]
    lines = [valid]
    for i, column in enumerate(table.columns):
        lines += [[*valid[:i], value, *valid[i + 1 :]] for value in VALUES[column]]
    lines += [[rng.choice(VALUES[c]) for c in table.columns] for _ in range(count)]
    return lines


def _passes(table: Table, line: list[str]) -> bool:
    assert table.plain is not None
    screen = Screen(table.plain, list(table.columns))
    screen.check([",".join(line).encode()], plain=True)
    return screen.clean


async def _failing_own_checks(raw: asyncpg.Connection, table: Table, lines: list[list[str]]) -> set[int]:
    """The indexes of the lines that fail a check of their own in SQL, but for those the screen
    leaves to SQL (`after_screen`)."""
    columns = ", ".join(f"{c} text" for c in table.columns)
    await raw.execute(f"CREATE TEMP TABLE screened_{table.name} (n int, {columns}) ON COMMIT DROP")
    await raw.copy_records_to_table(
        f"screened_{table.name}", records=[(n, *(v or None for v in line)) for n, line in enumerate(lines)]
    )
    checks = [c for c in table.checks if c not in table.after_screen]
    wrong = " OR ".join(f"COALESCE({condition}, false)" for _, _, condition in checks)
    return {r["n"] for r in await raw.fetch(f"SELECT n FROM screened_{table.name} WHERE {wrong}")}


async def test_a_line_the_screen_lets_through_passes_every_check_of_its_own(engine: AsyncEngine) -> None:
    raw = await connect(engine.url.render_as_string(hide_password=False))
    try:
        for table, seed in ((TRANSACTIONS, 1), (STATEMENTS, 2)):
            lines = _lines(table, 3000, seed)
            async with raw.transaction():
                failing = await _failing_own_checks(raw, table, lines)
            through = {n for n, line in enumerate(lines) if _passes(table, line)}
            assert through & failing == set(), [lines[n] for n in sorted(through & failing)[:5]]
            assert 0 in through  # the valid line
            assert len(failing) > len(lines) // 2  # the mixes are mostly wrong: the check is not idle
    finally:
        await raw.close()


def test_the_lines_of_real_exports_go_through() -> None:
    for line in (
        ["ACC-0000001", "T17", "2026-01-31", "purchase", "1234.56", "咖啡店", "dining", ""],
        ["ACC-0000001", "T18", "2028-02-29", "fee", "0.05", "", "", "Late fee"],
        ["ACC 1", "2026-06-30-77", "2026-06-30", "payment", "100", "", "", ""],
    ):
        assert _passes(TRANSACTIONS, line), line
    assert not _passes(TRANSACTIONS, ["ACC-1", "T1", "2026-02-29", "purchase", "1.00", "", "", ""])
    assert not _passes(TRANSACTIONS, ["ACC-1", "T1", "2026-03-01", "adjustment", "-1.00", "", "", ""])


async def test_a_first_load_of_a_line_the_screen_leaves_to_sql_is_checked_there(
    make_tenant: Any, engine: AsyncEngine, tmp_path: Path
) -> None:
    """A negative adjustment is not screened (the screen takes only positive amounts): its file goes
    through the SQL checks, which accept it and name a wrong line as ever."""
    bank = await make_tenant()
    files = {name: tmp_path / f"{name}.csv" for name in ("customers", "accounts", "statements", "transactions")}
    files["customers"].write_text("ref,name,locale\nC1,Ann,en\n")
    files["accounts"].write_text(
        "ref,customer_ref,kind,currency,masked_number,opening_balance\nA1,C1,credit_card,EUR,**** 1,0.00\n"
    )
    files["statements"].write_text(
        "account_ref,period_start,period_end,due_date,minimum_due\nA1,2026-03-01,2026-03-31,2026-04-25,25.00\n"
    )
    header = "account_ref,ref,posted_on,kind,amount,merchant,category,description\n"
    files["transactions"].write_text(
        header + "A1,T1,2026-03-10,adjustment,-5.00,,,Goodwill\nA1,T2,2026-03-11,purchase,0.00,Shop,,\n"
    )
    raw = await connect(engine.url.render_as_string(hide_password=False))
    try:
        async with raw.transaction():
            try:
                await load_csv(raw, bank.slug, files, lambda *_: None)
            except Exception as exc:
                rejected = str(exc)
        files["transactions"].write_text(header + "A1,T1,2026-03-10,adjustment,-5.00,,,Goodwill\n")
        async with raw.transaction():
            report = await load_csv(raw, bank.slug, files, lambda *_: None)
    finally:
        await raw.close()
    assert rejected == "transactions.csv: line 3, column amount: must be positive (only adjustments are signed)"
    assert report.tables["transactions"].created == 1
