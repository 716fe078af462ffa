"""customers, conversations, knowledge_articles: no CHECK on the locale

Revision ID: 0023
Revises: 0022

Which locales exist is decided by the folders prompts/locales/<locale>/ (app/locales.py), not by the
schema: a new folder is a new locale without a migration. The application refuses a locale without
a folder where one comes in (a request, an import file, a CSV import, a library file, the console);
the column stays short (varchar(8), the Locale type's length).
"""

from __future__ import annotations

from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels = None
depends_on = None

_TABLES = ("customers", "conversations", "knowledge_articles")


def upgrade() -> None:
    for table in _TABLES:
        op.drop_constraint(op.f(f"ck_{table}_locale"), table, type_="check")


def downgrade() -> None:
    for table in _TABLES:
        op.create_check_constraint(op.f(f"ck_{table}_locale"), table, "locale IN ('en', 'zh-CN')")
