"""answer cache: statement data versions kept by triggers, and the cache of validated answers

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 15:50:00

A statement's answer depends on the transactions up to its period end (through the opening
balances) and on payments after it (the payment status). So a changed transaction bumps the data
version of every statement of its account whose period ends on or after its date, and a changed
payment bumps all of them; a purchase in November leaves October's answers valid. Changing a
statement or an account's opening balance bumps too. Identical re-imports write nothing, so bump
nothing.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TRIGGERS = [
    """
CREATE FUNCTION bump_statements_for_transaction() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT * FROM (SELECT NEW.account_id, NEW.posted_on, NEW.kind WHERE TG_OP <> 'DELETE'
                            UNION ALL
                            SELECT OLD.account_id, OLD.posted_on, OLD.kind WHERE TG_OP <> 'INSERT') AS t(account_id, posted_on, kind)
    LOOP
        UPDATE statements SET data_version = data_version + 1
        WHERE account_id = r.account_id AND (r.kind = 'payment' OR period_end >= r.posted_on);
    END LOOP;
    RETURN NULL;
END $$""",
    """CREATE TRIGGER transactions_bump_statements AFTER INSERT OR UPDATE OR DELETE ON transactions
FOR EACH ROW EXECUTE FUNCTION bump_statements_for_transaction()""",
    """CREATE FUNCTION bump_statement_on_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (NEW.period_start, NEW.period_end, NEW.due_date, NEW.minimum_due)
       IS DISTINCT FROM (OLD.period_start, OLD.period_end, OLD.due_date, OLD.minimum_due) THEN
        NEW.data_version := OLD.data_version + 1;
    END IF;
    RETURN NEW;
END $$""",
    """CREATE TRIGGER statements_bump_on_change BEFORE UPDATE ON statements
FOR EACH ROW EXECUTE FUNCTION bump_statement_on_change()""",
    """CREATE FUNCTION bump_statements_for_account() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.opening_balance IS DISTINCT FROM OLD.opening_balance THEN
        UPDATE statements SET data_version = data_version + 1 WHERE account_id = NEW.id;
    END IF;
    RETURN NULL;
END $$""",
    """CREATE TRIGGER accounts_bump_statements AFTER UPDATE ON accounts
FOR EACH ROW EXECUTE FUNCTION bump_statements_for_account()""",
]


def upgrade() -> None:
    op.add_column("statements", sa.Column("data_version", sa.BigInteger(), server_default=sa.text("1"), nullable=False))
    for statement in TRIGGERS:  # one at a time: asyncpg runs a single command per call
        op.execute(statement)
    op.create_table(
        "answer_cache",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("tenant_id", sa.BigInteger(), nullable=False),
        sa.Column("statement_id", sa.BigInteger(), nullable=False),
        sa.Column("data_version", sa.BigInteger(), nullable=False),
        sa.Column("intent", sa.String(length=16), nullable=False),
        sa.Column("locale", sa.String(length=8), nullable=False),
        sa.Column("prompt_version", sa.String(length=16), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("as_of", sa.Date(), nullable=False),
        sa.Column("answer", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id", "statement_id"],
            ["statements.tenant_id", "statements.id"],
            name=op.f("fk_answer_cache_tenant_id_statement_id_statements"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenants.id"], name=op.f("fk_answer_cache_tenant_id_tenants"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_answer_cache")),
        sa.UniqueConstraint(
            "tenant_id",
            "statement_id",
            "data_version",
            "intent",
            "locale",
            "prompt_version",
            "model",
            "as_of",
            name=op.f("uq_answer_cache_key"),
        ),
    )


def downgrade() -> None:
    op.drop_table("answer_cache")
    op.execute("DROP TRIGGER accounts_bump_statements ON accounts; DROP FUNCTION bump_statements_for_account();")
    op.execute("DROP TRIGGER statements_bump_on_change ON statements; DROP FUNCTION bump_statement_on_change();")
    op.execute(
        "DROP TRIGGER transactions_bump_statements ON transactions; DROP FUNCTION bump_statements_for_transaction();"
    )
    op.drop_column("statements", "data_version")
