"""the answer cache keeps its statement's labels (merchants and fees, as a question is searched for
them), so that one statement can both find a hit and write its audit row (app/answers/cache.py): a
bill-change question that names one of them is a charge question, which is never served from the
cache. Entries cached without them are dropped (precompute, or the next miss, fills them again).

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("DELETE FROM answer_cache")
    op.add_column("answer_cache", sa.Column("labels", ARRAY(sa.Text()), nullable=False))


def downgrade() -> None:
    op.drop_column("answer_cache", "labels")
