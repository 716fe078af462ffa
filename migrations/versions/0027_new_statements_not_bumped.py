"""statement lines changed: a load's new statements are not bumped

Revision ID: 0027
Revises: 0026

A statement's data_version keys the answers cached and precomputed for it; a changed line bumps it
on every statement from the line's day on (0019). A first load's lines bumped every statement the
same load had just created: 24,000 row versions at 2,000 accounts (0.9 s of a 400,000-line load,
with the foreign-key checks that an update of a row inserted in the same transaction runs), for
statements that nobody can have read. Inside a transaction that defers new statements' summaries
(`bill_assistant.summaries_deferred`, 0026), a statement with no summary yet is one that load
created: it is summarized, not bumped. Every other statement, and every other writer, is as before.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels = None
depends_on = None

LINES_CHANGED = """
CREATE OR REPLACE FUNCTION statement_lines_changed(spans jsonb) RETURNS void LANGUAGE sql AS $$
WITH span AS (
    SELECT * FROM jsonb_to_recordset(spans) AS x(account_id bigint, first_day date, payment boolean, days date[])
),
hit AS (
    SELECT s.id,
           EXISTS (SELECT FROM unnest(span.days) d WHERE d BETWEEN s.period_start AND s.period_end) AS touched,
           current_setting('bill_assistant.summaries_deferred', true) = 'on'
               AND NOT EXISTS (SELECT FROM statement_summaries ss WHERE ss.statement_id = s.id) AS created
    FROM statements s JOIN span ON s.account_id = span.account_id
    WHERE span.payment OR s.period_end >= span.first_day
),
bumped AS (
    UPDATE statements s SET data_version = s.data_version + 1 FROM hit WHERE s.id = hit.id AND NOT hit.created
)
SELECT refresh_statement_summaries(ARRAY(SELECT id FROM hit WHERE touched))
$$"""


def _0019() -> str:
    spec = importlib.util.spec_from_file_location("m0019", Path(__file__).with_name("0019_exact_summary_refresh.py"))
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    before: str = module.LINES_CHANGED
    return before


def upgrade() -> None:
    op.execute(LINES_CHANGED)


def downgrade() -> None:
    op.execute(_0019())
