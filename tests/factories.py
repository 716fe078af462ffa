"""Small import documents for tests, in the JSON exchange format, and importing one."""

from __future__ import annotations

import copy
import csv
from pathlib import Path
from typing import Any

import msgspec
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.data.connecting import connect
from app.data.csv_format import TABLES
from app.data.csv_import import load_csv
from app.data.import_format import parse
from app.data.importer import import_file
from app.data.staging import ImportReport


def tx(ref: str, posted_on: str, kind: str, amount: str, merchant: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"ref": ref, "posted_on": posted_on, "kind": kind, "amount": amount, "merchant": merchant, **extra}


def statement(start: str, end: str, due: str, minimum: str = "25.00") -> dict[str, Any]:
    return {"period_start": start, "period_end": end, "due_date": due, "minimum_due": minimum}


SEPT = statement("2026-09-01", "2026-09-30", "2026-10-25")
OCT = statement("2026-10-01", "2026-10-31", "2026-11-25")


def account(ref: str = "A-1", currency: str = "EUR", statements: list[Any] | None = None,
            transactions: list[Any] | None = None, opening: str = "0.00") -> dict[str, Any]:  # fmt: skip
    return {
        "ref": ref, "kind": "credit_card", "currency": currency, "masked_number": "**** 4821",
        "opening_balance": opening, "statements": statements if statements is not None else [SEPT, OCT],
        "transactions": transactions if transactions is not None else GYM_STORY,
    }  # fmt: skip


def customer(ref: str = "C-1001", locale: str = "en", accounts: list[Any] | None = None) -> dict[str, Any]:
    return {"ref": ref, "name": "Ann Lee", "locale": locale, "accounts": accounts or [account()]}


def document(tenant: str, customers: list[Any] | None = None) -> dict[str, Any]:
    # A deep copy: tests edit documents, and the module-level stories must stay as they are.
    return copy.deepcopy({"tenant": tenant, "customers": customers or [customer()]})


def write_csv(doc: dict[str, Any], folder: Path) -> dict[str, Path]:
    """A JSON import document as the four CSV files."""
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in TABLES}
    for c in doc["customers"]:
        rows["customers"].append({"ref": c["ref"], "name": c["name"], "locale": c["locale"]})
        for a in c["accounts"]:
            plain = {k: v for k, v in a.items() if k not in ("statements", "transactions")}
            rows["accounts"].append({**plain, "customer_ref": c["ref"]})
            rows["statements"] += [{"account_ref": a["ref"], **s} for s in a["statements"]]
            rows["transactions"] += [{"account_ref": a["ref"], **t} for t in a["transactions"]]  # a test may move one
    files = {}
    for name, table in TABLES.items():
        files[name] = folder / f"{name}.csv"
        with files[name].open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(reversed(table.columns)))  # any column order
            writer.writeheader()
            writer.writerows(rows[name])
    return files


async def load_files(engine: AsyncEngine, tenant: str, files: dict[str, Path], *, force: bool = False) -> ImportReport:
    """A CSV load as `bill-assistant import` runs it: one driver connection, one transaction."""
    raw = await connect(engine.url.render_as_string(hide_password=False))
    try:
        async with raw.transaction():
            return await load_csv(raw, tenant, files, lambda *_: None, force=force)
    finally:
        await raw.close()


async def import_document(conn: AsyncConnection, doc: dict[str, Any]) -> ImportReport:
    """Import a document (a dict, as above) on the connection, in its transaction."""
    return await import_file(conn, parse(msgspec.json.encode(doc)))


# September: 100.00 + 12.99 = 112.99. October: the same plus a new 12.00 gym membership; the September
# bill is paid in October, so the carried balance is unchanged: the bill is 12.00 higher.
GYM_STORY = [
    tx("T-1", "2026-09-03", "purchase", "100.00", "FreshMart"),
    tx("T-2", "2026-09-10", "purchase", "12.99", "Netflix"),
    tx("T-3", "2026-10-03", "purchase", "100.00", "FreshMart"),
    tx("T-4", "2026-10-10", "purchase", "12.99", "Netflix"),
    tx("T-5", "2026-10-12", "purchase", "12.00", "City Gym", description="Monthly membership"),
    tx("T-6", "2026-10-15", "payment", "112.99", description="Payment - thank you"),
]


async def snapshot(engine: AsyncEngine, tenant_id: int) -> list[Any]:
    """Every row of the tenant with its xmin: a changed xmin means the row was written again."""
    rows = []
    async with engine.connect() as conn:
        for table in ("customers", "accounts", "statements", "transactions"):
            result = await conn.execute(
                text(f"SELECT xmin::text, * FROM {table} WHERE tenant_id = :t ORDER BY id"), {"t": tenant_id}
            )
            rows += [(table, *row) for row in result.all()]
    return rows


# October adds two purchases that both match "the cafe one" to the usual story.
CAFES = [
    tx("T-1", "2026-09-03", "purchase", "100.00", "FreshMart"),
    tx("T-3", "2026-10-03", "purchase", "100.00", "FreshMart"),
    tx("T-7", "2026-10-08", "purchase", "6.20", "Blue Cafe"),
    tx("T-8", "2026-10-09", "purchase", "4.80", "Cafe Nero"),
    tx("T-6", "2026-10-15", "payment", "100.00", description="Payment - thank you"),
]
# C-3003, whose October holds both cafes.
CAFE_LOVER = customer("C-3003", accounts=[account("K-1", statements=[SEPT, OCT], transactions=CAFES)])
