"""answers: who asked (a request, a batch job's item, or the service filling its cache)

Revision ID: 0013
Revises: 0012

Audit rows of the answer cache's fills (precompute, the fill after a miss) and of batch jobs' items
looked like any batch request; exporting the traffic a bank really had (`traffic export`) needs to
tell them apart. Rows written before this are requests.
"""

from __future__ import annotations

from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE answers ADD COLUMN origin varchar(8) NOT NULL DEFAULT 'request'")
    op.execute("ALTER TABLE answers ADD CONSTRAINT ck_answers_origin CHECK (origin IN ('request', 'job', 'fill'))")


def downgrade() -> None:
    op.execute("ALTER TABLE answers DROP COLUMN origin")
