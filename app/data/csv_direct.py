"""A tenant's first load of a large table, copied straight into it: no staging table, no checks in
SQL, no INSERT ... SELECT (app/data/csv_import.py stages every other load).

Each chunk of the file is screened as it is read (app/data/csv_lines.py `Screen`: values that every
check of their own accepts), and each line's account ref is replaced by the tenant and the account's
id; COPY reads the rest as it would have read it into the staging table (an empty field is NULL, a
date or an amount is typed by the same input functions as the staged road's casts), while Python
reads the next chunk. A line the screen does not pass, an account the tenant does not have, a file
COPY refuses, or a key written twice (the table's unique key refuses it) stops the copy with
`NotDirect`: the load starts again on the staged road, which names what is wrong.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import asyncpg

from app.data.csv_format import CHUNK, Table
from app.data.csv_lines import Screen, Sieve
from app.data.sql import Statement


class NotDirect(Exception):
    """The file cannot be copied straight in: it goes through the staged road."""


async def _lines(
    path: Path, sieve: Sieve, parent_at: int, parents: dict[bytes, bytes], sent: Callable[[int, int], None]
) -> AsyncIterator[bytes]:
    """The file as COPY reads it into the table: its header, then each line with its parent's ref
    (at `parent_at`) replaced by `parents`' tenant and id. `sent`: each chunk's bytes and rows."""
    header, screen = None, sieve.screen
    assert screen is not None
    with path.open("rb") as f:
        while True:
            chunk = f.read(CHUNK)
            records, _ = sieve.take(chunk)
            sent(len(chunk), len(records))
            if not screen.clean:
                raise NotDirect
            if header is None and (header := sieve.header) is not None:
                yield header + b"\n"  # COPY reads the lines' end from the header, and skips it
            out = []
            for record in records:  # plain: no quote, so split by commas
                end = b"\r" if record.endswith(b"\r") else b""  # kept: COPY checks the lines' ends
                fields = (record[:-1] if end else record).split(b",")
                try:
                    fields[parent_at] = parents[fields[parent_at]]
                except KeyError:
                    raise NotDirect from None
                out.append(b",".join(fields) + end)
            if out:
                yield b"\n".join(out) + b"\n"
            if not chunk:
                return


_PARENTS = "SELECT ref, id FROM {parent} WHERE tenant_id = :tenant_id"


async def copy_in(
    raw: asyncpg.Connection, table: Table, tenant: int, path: Path, columns: list[str], sent: Callable[[int, int], None]
) -> tuple[int, Sieve]:
    """The file's lines (its header naming `columns`) written into the table, where the tenant has
    none (a first load); how many, and the sieve that read them (their digests: what the next load
    compares with)."""
    assert table.plain is not None
    assert table.parents is not None
    ref, parent = table.parents
    query = Statement(_PARENTS.format(parent=parent))
    rows = await raw.fetch(query.sql, *query.args({"tenant_id": tenant}))
    parents = {r[0].encode(): f"{tenant},{r[1]}".encode() for r in rows}
    stored = [c for name in columns for c in (("tenant_id", f"{parent[:-1]}_id") if name == ref else (name,))]
    sieve = Sieve(None, Screen(table.plain, columns))
    lines = _lines(path, sieve, columns.index(ref), parents, sent)
    try:
        status = await raw.copy_to_table(table.name, source=lines, columns=stored, format="csv", header=True)
    except (asyncpg.UniqueViolationError, asyncpg.DataError):
        raise NotDirect from None
    return int(status.split()[-1]), sieve  # "COPY <rows>"
