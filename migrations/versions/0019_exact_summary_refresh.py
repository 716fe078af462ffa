"""statement summaries: refresh exactly the statements whose period holds a changed line, and find
moved statements without a nested loop

Revision ID: 0019
Revises: 0018

0011's statements trigger found the statements whose period or account an UPDATE changed by joining
its transition tables on id. Transition tables have no statistics, so the join was planned as a
nested loop: bumping the data_version of an account's 12,000 statements (what any changed line does
to the statements after it) took 12 s in that trigger alone. The same question asked with EXCEPT
(a hash or a sort) takes milliseconds.

0011's statement-level trigger refreshed, per account, every statement between the first and the
last day of the changed lines. A nightly file with a few changed lines scattered over an account's
year spans the year, so every summary was rebuilt (twice: the merge's insert and its update each
fire). Now each account's changed days are passed, and a summary is rebuilt only when one of them
falls in its period. What is bumped (data_version) is unchanged: every statement from the first
changed day on, and all of them when a payment changed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels = None
depends_on = None

LINES_CHANGED = """
CREATE OR REPLACE FUNCTION statement_lines_changed(spans jsonb) RETURNS void LANGUAGE sql AS $$
WITH span AS (
    SELECT * FROM jsonb_to_recordset(spans) AS x(account_id bigint, first_day date, payment boolean, days date[])
),
bumped AS (
    UPDATE statements s SET data_version = s.data_version + 1
    FROM span
    WHERE s.account_id = span.account_id AND (span.payment OR s.period_end >= span.first_day)
    RETURNING s.id, EXISTS (SELECT FROM unnest(span.days) d WHERE d BETWEEN s.period_start AND s.period_end) AS touched
)
SELECT refresh_statement_summaries(ARRAY(SELECT id FROM bumped WHERE touched))
$$"""

# One row per account: its first changed day, whether a payment changed, and every changed day.
_PERFORM = """PERFORM statement_lines_changed(jsonb_agg(jsonb_build_object(
            'account_id', account_id, 'first_day', first_day, 'payment', payment, 'days', days)))
        FROM (SELECT account_id, MIN(posted_on) AS first_day, bool_or(kind = 'payment') AS payment,
                     array_agg(DISTINCT posted_on) AS days
              FROM {rows} GROUP BY account_id) per_account
        HAVING COUNT(*) > 0;"""

TRANSACTIONS_CHANGED = f"""
CREATE OR REPLACE FUNCTION transactions_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        {_PERFORM.format(rows="new_rows")}
    ELSIF TG_OP = 'DELETE' THEN
        {_PERFORM.format(rows="old_rows")}
    ELSE
        {_PERFORM.format(rows="(SELECT * FROM old_rows UNION ALL SELECT * FROM new_rows) AS changed")}
    END IF;
    RETURN NULL;
END $$"""


STATEMENTS_CHANGED = """
CREATE OR REPLACE FUNCTION statements_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM refresh_statement_summaries(ARRAY(SELECT id FROM new_rows));
    ELSE
        PERFORM refresh_statement_summaries(ARRAY(
            SELECT id FROM (SELECT id, period_start, period_end, account_id FROM new_rows
                            EXCEPT SELECT id, period_start, period_end, account_id FROM old_rows) moved));
    END IF;
    RETURN NULL;
END $$"""


def upgrade() -> None:
    op.execute(LINES_CHANGED)
    op.execute(TRANSACTIONS_CHANGED)
    op.execute(STATEMENTS_CHANGED)


def downgrade() -> None:
    spec = importlib.util.spec_from_file_location("m0011", Path(__file__).with_name("0011_statement_summaries.py"))
    assert spec is not None
    assert spec.loader is not None
    before = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(before)  # 0011's functions, restored as they were
    op.execute(before.LINES_CHANGED.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1))
    op.execute(before.TRANSACTIONS_CHANGED.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1))
    op.execute(before.STATEMENTS_CHANGED.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1))
