"""conversations: until when the agent who has it is writing a reply

Revision ID: 0022
Revises: 0021

The customer's widget says "<agent> is writing…" while the agent types (issue 35, item 2). The
console says so at most every couple of seconds while the reply box changes; the mark lapses on its
own, so an agent who stops typing or closes the page leaves nothing to clean up. A column, not
process memory: the customer's feed may be served by another replica than the agent's page.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("conversations", sa.Column("agent_writing_until", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column("conversations", "agent_writing_until")
