"""transactions: an account's lines found by their label

Revision ID: 0029
Revises: 0028

A question that names a merchant or a fee reads that label's largest lines in the statement beyond
the ones its summary names (app/data/history.py). Found through (account_id, posted_on), every line
of the period was read and labelled: 10,000 of them for a 10,000-line statement, whose answer took
3.6 times a 20-line one's (bench statement-size, a merchant-named question). Through this index
only the label's lines are read (1.4 times). Payments are never named lines, so they are left out.
A load pays for it: one label and one index entry per written line (about 0.7 s of a 400,000-line
first load here, measured side by side; docs/benchmarks.md).
"""

from __future__ import annotations

from alembic import op

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE INDEX ix_transactions_account_id_label ON transactions"
        " (account_id, line_label(kind, merchant, description), posted_on) WHERE kind <> 'payment'"
    )


def downgrade() -> None:
    op.execute("DROP INDEX ix_transactions_account_id_label")
