"""The answer cache is keyed by the engine profile (model, quantization, engine build), not the
model's label alone; entries cached under a label are dropped (they name no profile).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("DELETE FROM answer_cache")
    op.alter_column("answer_cache", "model", new_column_name="engine_profile")


def downgrade() -> None:
    op.execute("DELETE FROM answer_cache")
    op.alter_column("answer_cache", "engine_profile", new_column_name="model")
