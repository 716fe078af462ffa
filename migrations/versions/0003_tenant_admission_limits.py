"""tenant admission limits: weight, concurrency cap, request rate

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 15:05:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("tenants", sa.Column("weight", sa.Integer(), server_default=sa.text("1"), nullable=False))
    op.add_column("tenants", sa.Column("max_concurrency", sa.Integer(), server_default=sa.text("8"), nullable=False))
    op.add_column("tenants", sa.Column("rate_limit_per_s", sa.Float(), server_default=sa.text("20"), nullable=False))
    op.create_check_constraint(op.f("ck_tenants_weight"), "tenants", "weight > 0")
    op.create_check_constraint(op.f("ck_tenants_max_concurrency"), "tenants", "max_concurrency > 0")
    op.create_check_constraint(op.f("ck_tenants_rate_limit"), "tenants", "rate_limit_per_s > 0")


def downgrade() -> None:
    for name in ("rate_limit", "max_concurrency", "weight"):
        op.drop_constraint(op.f(f"ck_tenants_{name}"), "tenants", type_="check")
    for column in ("rate_limit_per_s", "max_concurrency", "weight"):
        op.drop_column("tenants", column)
