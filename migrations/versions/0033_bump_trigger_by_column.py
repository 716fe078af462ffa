"""statements: the trigger that bumps a changed statement's data version fires only for its columns

Revision ID: 0033
Revises: 0032

`statements_bump_on_change` (0004) bumps the data version of a statement whose period, due date or
minimum due changed. It fired on every update of a statement, so also on the updates that bump the
data version themselves: a nightly load's 5,961 bumps each called it and, as a BEFORE ROW trigger,
first locked the row (one more WAL record a row). Fired only by an UPDATE that sets one of those
columns, 6,000 bumps take 23-31 ms where they took 34-46, and a month-to-date nightly's
`statement_lines_changed` 210-215 ms where it took 214-252 (docs/benchmarks.md). What it does is
unchanged: no other trigger on statements sets those columns.
"""

from __future__ import annotations

from alembic import op

revision: str = "0033"
down_revision: str | None = "0032"
branch_labels = None
depends_on = None

_TRIGGER = """CREATE TRIGGER statements_bump_on_change BEFORE UPDATE{columns} ON statements
FOR EACH ROW EXECUTE FUNCTION bump_statement_on_change()"""


def upgrade() -> None:
    op.execute("DROP TRIGGER statements_bump_on_change ON statements")
    op.execute(_TRIGGER.format(columns=" OF period_start, period_end, due_date, minimum_due"))


def downgrade() -> None:
    op.execute("DROP TRIGGER statements_bump_on_change ON statements")
    op.execute(_TRIGGER.format(columns=""))
