"""conversation messages: the language each was written or answered in, and the audit row of the
request that answered it

Revision ID: 0021
Revises: 0020

The console marks every message with its own `lang` and says which language it was in: a customer
may write Chinese in a conversation opened in English. A cached answer keeps the canonical answer's
id (`answer_id`, what the customer was told); `audit_id` is this request's own audit row, which holds
the customer's question, so the console opens what the customer actually asked. Older rows have
neither: the console falls back to the conversation's language and to `answer_id`.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("conversation_messages", sa.Column("locale", sa.String(length=16), nullable=True))
    op.add_column("conversation_messages", sa.Column("audit_id", sa.UUID(), nullable=True))


def downgrade() -> None:
    op.drop_column("conversation_messages", "audit_id")
    op.drop_column("conversation_messages", "locale")
