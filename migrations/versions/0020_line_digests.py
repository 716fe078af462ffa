"""bulk loads: the digest of each line of the last load, and one summary refresh per CSV merge

Revision ID: 0020
Revises: 0019

`bulk_loads.line_digests`: the header's and every line's digest of the last load's transactions
file (app/data/csv_lines.py). While the tenant's ledger version has not moved, the next load sends
Postgres only the lines that are not among them (a nightly file: the 1-2% that changed).

A CSV merge updates and inserts transactions in one statement, which fired the transactions
triggers twice: a month-to-date file rebuilt the last period's summaries once for its changed lines
and again for its new ones. Inside a transaction that sets `bill_assistant.lines_merged` to `on`,
the trigger leaves the statements to the loader, which passes every changed line, old and new, to
`statement_lines_changed` once (app/data/csv_import.py). Every other writer is as before.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels = None
depends_on = None


def _0019() -> object:
    spec = importlib.util.spec_from_file_location("m0019", Path(__file__).with_name("0019_exact_summary_refresh.py"))
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def upgrade() -> None:
    op.execute("ALTER TABLE bulk_loads ADD COLUMN line_digests bytea")
    # Digests do not compress: stored out of line without trying.
    op.execute("ALTER TABLE bulk_loads ALTER COLUMN line_digests SET STORAGE EXTERNAL")
    before: str = _0019().TRANSACTIONS_CHANGED
    guard = "BEGIN\n    IF current_setting('bill_assistant.lines_merged', true) = 'on' THEN\n        RETURN NULL;\n    END IF;"
    op.execute(before.replace("BEGIN", guard, 1))


def downgrade() -> None:
    op.execute(_0019().TRANSACTIONS_CHANGED)
    op.execute("ALTER TABLE bulk_loads DROP COLUMN line_digests")
