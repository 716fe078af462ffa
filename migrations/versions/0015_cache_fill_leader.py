"""the answer cache's scheduled fill: one replica at a time does it, by a lease row

Revision ID: 0015
Revises: 0014

Every replica runs the fill loop (app/answers/cache_fill.py); only the holder of this row's lease
fills. Taking or renewing it is one statement (no session lock, so it holds behind a
transaction-mode pooler); a holder that dies loses it when the lease expires.
"""

from __future__ import annotations

from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""CREATE TABLE cache_fill_leader (
    id smallint PRIMARY KEY CONSTRAINT ck_cache_fill_leader_one CHECK (id = 1),
    holder text NOT NULL,
    expires_at timestamptz NOT NULL
)""")


def downgrade() -> None:
    op.execute("DROP TABLE cache_fill_leader")
