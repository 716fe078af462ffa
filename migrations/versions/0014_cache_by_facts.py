"""the answer cache keyed by what an answer states: a digest of its facts, not the as-of date

Revision ID: 0014
Revises: 0013

A cached answer was found by its statement's data version and the exact as-of date, so every new day
missed every entry although most statements' facts had not changed. The key is now a digest of the
facts the answer is built from (app/domain/facts.py `facts_digest`: the as-of date counts only as
whether the due date has passed), with the intent, locale, prompt version and engine profile: the
same facts on the next day hit; a payment, a new line or the due date passing change the facts and
miss. The hit is looked up once the facts are computed, so the statement's labels (0010, which let
the records' statement tell a charge question apart) are no longer needed. The data version stays,
not in the key: precompute skips statements answered at their current version. Entries cached under
the old key are dropped (precompute, or the next miss, fills them again).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels = None
depends_on = None

_KEY = ("tenant_id", "statement_id", "facts_digest", "intent", "locale", "prompt_version", "engine_profile")
_OLD_KEY = (
    "tenant_id",
    "statement_id",
    "data_version",
    "intent",
    "locale",
    "prompt_version",
    "engine_profile",
    "as_of",
)


def upgrade() -> None:
    op.execute("DELETE FROM answer_cache")
    op.drop_constraint("uq_answer_cache_key", "answer_cache", type_="unique")
    op.drop_column("answer_cache", "as_of")
    op.drop_column("answer_cache", "labels")
    op.add_column("answer_cache", sa.Column("facts_digest", sa.String(64), nullable=False))
    op.create_unique_constraint("uq_answer_cache_key", "answer_cache", list(_KEY))


def downgrade() -> None:
    op.execute("DELETE FROM answer_cache")
    op.drop_constraint("uq_answer_cache_key", "answer_cache", type_="unique")
    op.drop_column("answer_cache", "facts_digest")
    op.add_column("answer_cache", sa.Column("labels", ARRAY(sa.Text()), nullable=False))
    op.add_column("answer_cache", sa.Column("as_of", sa.Date(), nullable=False))
    op.create_unique_constraint("uq_answer_cache_key", "answer_cache", list(_OLD_KEY))
