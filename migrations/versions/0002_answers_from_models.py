"""model answers: tenant policy, and intent, prompt version, model, usage and fallback reason per answer

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 14:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "tenants",
        sa.Column(
            "policy", postgresql.JSONB(astext_type=sa.Text()), server_default=sa.text("'{}'::jsonb"), nullable=False
        ),
    )
    # Rows written before this revision were all deterministic bill-change answers.
    op.add_column("answers", sa.Column("intent", sa.String(length=16), nullable=False, server_default="bill_change"))
    op.add_column("answers", sa.Column("prompt_version", sa.String(length=16), nullable=False, server_default=""))
    op.alter_column("answers", "intent", server_default=None)
    op.alter_column("answers", "prompt_version", server_default=None)
    op.add_column("answers", sa.Column("model", sa.String(length=200), nullable=True))
    op.add_column("answers", sa.Column("usage", postgresql.JSONB(astext_type=sa.Text()), nullable=True))
    op.add_column("answers", sa.Column("fallback_reason", sa.Text(), nullable=True))


def downgrade() -> None:
    for column in ("fallback_reason", "usage", "model", "prompt_version", "intent"):
        op.drop_column("answers", column)
    op.drop_column("tenants", "policy")
