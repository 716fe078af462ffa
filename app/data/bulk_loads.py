"""What a CSV load remembers, so that loading the same files again costs a digest, not a load.

A bank's nightly job often sends yesterday's export again, unchanged. Checking and merging a million
unchanged rows still reads them all (the COPY, the checks, the comparison with the stored rows);
instead, each load records the sha256 of its files (table names and bytes, in load order), its row
counts, and the tenant's ledger version as it committed (`ledger_versions`, bumped by triggers on any
write to the tenant's customers, accounts, statements or transactions: migration 0012). Files with
the same digest while that version has not moved would write nothing, so the load answers from the
record. Any other write to the tenant since (a JSON import, a correction, another CSV load) moves the
version, and the files are loaded again in full, putting back what they say. `--force` loads in full.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import asyncpg
import msgspec

from app.data.csv_format import CHUNK
from app.data.sql import Statement

_LAST = Statement("""
SELECT b.counts::text FROM bulk_loads b
WHERE b.tenant_id = :tenant_id AND b.digest = :digest
  AND b.ledger_version = COALESCE((SELECT version FROM ledger_versions WHERE tenant_id = :tenant_id), 0)""")
_RECORD = Statement("""
INSERT INTO bulk_loads AS b (tenant_id, digest, counts, ledger_version)
VALUES (:tenant_id, :digest, CAST(:counts AS jsonb),
        COALESCE((SELECT version FROM ledger_versions WHERE tenant_id = :tenant_id), 0))
ON CONFLICT (tenant_id) DO UPDATE
SET digest = EXCLUDED.digest, counts = EXCLUDED.counts, ledger_version = EXCLUDED.ledger_version, loaded_at = now()""")


def digest(files: dict[str, Path]) -> bytes:
    """sha256 over each file's table name and bytes, in the given (load) order."""
    h = hashlib.sha256()
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


async def record(raw: asyncpg.Connection, tenant_id: int, files_digest: bytes, counts: dict[str, int]) -> None:
    """Remember this load; in its transaction, after its writes (so the version includes them)."""
    values = {"tenant_id": tenant_id, "digest": files_digest, "counts": msgspec.json.encode(counts).decode()}
    await raw.execute(_RECORD.sql, *_RECORD.args(values))
