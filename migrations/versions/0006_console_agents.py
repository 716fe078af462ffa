"""agent console: per-tenant agent users (with a sign-in lockout), their server-side sessions, and
stage start times per answer

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30 16:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "agents",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("tenant_id", sa.BigInteger(), nullable=False),
        sa.Column("username", sa.String(length=64), nullable=False),
        sa.Column("display_name", sa.String(length=200), nullable=False),
        sa.Column("password_hash", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("failed_logins", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("locked_until", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_agents_tenant_id_tenants"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agents")),
        sa.UniqueConstraint("tenant_id", "username", name=op.f("uq_agents_tenant_id_username")),
    )
    op.create_table(
        "agent_sessions",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("agent_id", sa.BigInteger(), nullable=False),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["agent_id"], ["agents.id"], name=op.f("fk_agent_sessions_agent_id_agents"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_agent_sessions")),
    )
    op.create_index(op.f("ix_agent_sessions_agent_id"), "agent_sessions", ["agent_id"])
    op.add_column("answers", sa.Column("stage_starts", postgresql.JSONB(astext_type=sa.Text()), nullable=True))
    op.create_index(op.f("ix_answers_account_id_created_at"), "answers", ["account_id", "created_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_answers_account_id_created_at"), table_name="answers")
    op.drop_column("answers", "stage_starts")
    op.drop_index(op.f("ix_agent_sessions_agent_id"), table_name="agent_sessions")
    op.drop_table("agent_sessions")
    op.drop_table("agents")
