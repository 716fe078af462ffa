"""What a CSV load remembers, so that loading the same files again costs a digest, not a load.

A bank's nightly job often sends yesterday's export again, unchanged. Checking and merging a million
unchanged rows still reads them all (the COPY, the checks, the comparison with the stored rows);
instead, each load records a digest of its files (XXH3-128 of their table names and bytes, in load
order: the files are the bank's own, so a fast hash, as for their lines), its row counts, and the
tenant's ledger version as it committed (`ledger_versions`, bumped by triggers on any write to the
tenant's customers, accounts, statements or transactions: migration 0012). Files with
the same digest while that version has not moved would write nothing, so the load answers from the
record. Any other write to the tenant since (a JSON import, a correction, another CSV load) moves the
version, and the files are loaded again in full, putting back what they say. `--force` loads in full.

A load also keeps the digest of each line of its files (app/data/csv_lines.py). While the version has
not moved, every such line still says exactly what is stored, so the next load (a nightly file: the
same lines, a few changed, a few added) sends Postgres only the transaction lines that are not among
them, and leaves alone a smaller file whose every line is. The load holds the tenant's version row
(`lock`) from the start: no other writer can change the tenant's ledger between the version read and
the commit.
"""

from __future__ import annotations

from pathlib import Path

import asyncpg
import msgspec
from xxhash import xxh3_128

from app.data.csv_format import CHUNK
from app.data.sql import Statement

_LAST = Statement("""
SELECT b.counts::text FROM bulk_loads b
WHERE b.tenant_id = :tenant_id AND b.digest = :digest
  AND b.ledger_version = COALESCE((SELECT version FROM ledger_versions WHERE tenant_id = :tenant_id), 0)""")
_RECORD = Statement("""
INSERT INTO bulk_loads AS b (tenant_id, digest, counts, ledger_version, line_digests)
VALUES (:tenant_id, :digest, CAST(:counts AS jsonb),
        COALESCE((SELECT version FROM ledger_versions WHERE tenant_id = :tenant_id), 0), :lines)
ON CONFLICT (tenant_id) DO UPDATE
SET digest = EXCLUDED.digest, counts = EXCLUDED.counts, ledger_version = EXCLUDED.ledger_version,
    line_digests = EXCLUDED.line_digests, loaded_at = now()""")
# Writers bump the version row (migration 0012's triggers): holding it keeps them out until commit.
_LOCK = Statement("SELECT version FROM ledger_versions WHERE tenant_id = :tenant_id FOR UPDATE")
_LINES = Statement("""
SELECT b.line_digests FROM bulk_loads b JOIN ledger_versions v USING (tenant_id)
WHERE b.tenant_id = :tenant_id AND b.ledger_version = v.version""")


def digest(files: dict[str, Path]) -> bytes:
    """XXH3-128 over each file's table name and bytes, in the given (load) order (a 400,000-line
    nightly's files: 6 ms, where sha256 took 22). A record of sha256's (32 bytes) never matches."""
    h = xxh3_128()
    for name, path in files.items():
        h.update(f"{name}\0{path.stat().st_size}\0".encode())
        with path.open("rb") as f:
            while chunk := f.read(CHUNK):
                h.update(chunk)
    return h.digest()


async def unchanged(raw: asyncpg.Connection, tenant_id: int, files_digest: bytes) -> dict[str, int] | None:
    """The row counts of the tenant's last load if it was of these very files and nothing of the
    tenant's has been written since; otherwise None."""
    row = await raw.fetchrow(_LAST.sql, *_LAST.args({"tenant_id": tenant_id, "digest": files_digest}))
    return None if row is None else msgspec.json.decode(row[0], type=dict[str, int])


async def lock(raw: asyncpg.Connection, tenant_id: int) -> None:
    """Hold the tenant's ledger version until the load's transaction ends."""
    await raw.execute(_LOCK.sql, *_LOCK.args({"tenant_id": tenant_id}))


async def last_lines(raw: asyncpg.Connection, tenant_id: int) -> dict[str, bytes]:
    """The line digests of each file of the tenant's last load (by table name, app/data/csv_lines.py),
    if nothing of the tenant's has been written since; else none."""
    value = await raw.fetchval(_LINES.sql, *_LINES.args({"tenant_id": tenant_id}))
    return {} if value is None else msgspec.msgpack.decode(value, type=dict[str, bytes])


async def record(
    raw: asyncpg.Connection, tenant_id: int, files_digest: bytes, counts: dict[str, int], lines: dict[str, bytes]
) -> None:
    """Remember this load; in its transaction, after its writes (so the version includes them)."""
    values = {"tenant_id": tenant_id, "digest": files_digest, "counts": msgspec.json.encode(counts).decode()}
    await raw.execute(_RECORD.sql, *_RECORD.args({**values, "lines": msgspec.msgpack.encode(lines)}))
