"""console sign-in throttling: per account and per client, in one table shared by every replica
(replaces the agents' hard lockout columns)

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-10 12:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "signin_throttle",
        sa.Column("key", sa.String(length=100), nullable=False),
        sa.Column("failures", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_signin_throttle")),
    )
    op.drop_column("agents", "locked_until")
    op.drop_column("agents", "failed_logins")


def downgrade() -> None:
    op.add_column("agents", sa.Column("failed_logins", sa.Integer(), server_default=sa.text("0"), nullable=False))
    op.add_column("agents", sa.Column("locked_until", sa.DateTime(timezone=True), nullable=True))
    op.drop_table("signin_throttle")
