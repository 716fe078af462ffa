"""the widget's conversations and their messages, and the agents who take them over

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "conversations",
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("tenant_id", sa.BigInteger(), nullable=False),
        sa.Column("customer_ref", sa.String(length=64), nullable=False),
        sa.Column("locale", sa.String(length=8), nullable=False),
        sa.Column("status", sa.String(length=8), server_default="bot", nullable=False),
        sa.Column("handover_reason", sa.String(length=16), nullable=True),
        sa.Column("waiting_since", sa.DateTime(timezone=True), nullable=True),
        sa.Column("agent_id", sa.BigInteger(), nullable=True),
        sa.Column("taken_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_seq", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("status IN ('bot', 'waiting', 'agent')", name=op.f("ck_conversations_status")),
        sa.CheckConstraint(
            "handover_reason IN ('requested', 'fallbacks', 'out_of_scope')",
            name=op.f("ck_conversations_handover_reason"),
        ),
        sa.CheckConstraint("locale IN ('en', 'zh-CN')", name=op.f("ck_conversations_locale")),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_conversations_tenant_id_tenants"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["agent_id"], ["agents.id"], name=op.f("fk_conversations_agent_id_agents"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_conversations")),
    )
    op.create_index(
        "ix_conversations_tenant_id_status_waiting_since", "conversations", ["tenant_id", "status", "waiting_since"]
    )
    op.create_table(
        "conversation_messages",
        sa.Column("conversation_id", sa.UUID(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=9), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("account_ref", sa.String(length=64), nullable=True),
        sa.Column("answer_id", sa.UUID(), nullable=True),
        sa.Column("facts", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("context", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("choices", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("agent_id", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "role IN ('customer', 'assistant', 'agent', 'system')", name=op.f("ck_conversation_messages_role")
        ),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_conversation_messages_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["agent_id"], ["agents.id"], name=op.f("fk_conversation_messages_agent_id_agents"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("conversation_id", "seq", name=op.f("pk_conversation_messages")),
    )


def downgrade() -> None:
    op.drop_table("conversation_messages")
    op.drop_index("ix_conversations_tenant_id_status_waiting_since", table_name="conversations")
    op.drop_table("conversations")
