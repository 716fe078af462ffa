"""bulk loads: cheaper statement summaries, and what an unchanged re-load needs to do nothing

Revision ID: 0012
Revises: 0011

- The summaries' totals and named lines are built as `json`, not `jsonb` (and left out of ANALYZE):
  an answer reads them as text anyway, and building a million objects as jsonb (binary, keys
  sorted) was the largest part of a bulk load's summary refresh. The named lines are ranked in one
  window pass instead of two. The numbers are those of 0011 (the property test of
  app/domain/facts.py `summarize` holds them).
- `ledger_versions`: a counter per tenant, bumped by statement-level triggers whenever any of its
  customers, accounts, statements or transactions is inserted, updated or deleted, by any writer.
- `bulk_loads`: per tenant, the digest of the last CSV files loaded, the row counts of that load, and
  the tenant's ledger version when it committed. A load of byte-identical files while the version
  has not moved since has nothing to write, and is answered from there (app/data/csv_import.py).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels = None
depends_on = None

# 12 and 24: app/domain/facts.py NAMED_CHARGES and NAMED_FEES. A line's charge rank counts the
# non-payment lines up to it, its fee rank the fees and interest: as 0011's two row_number()s, from
# one sort.
REFRESH = """
CREATE OR REPLACE FUNCTION refresh_statement_summaries(ids bigint[]) RETURNS void LANGUAGE sql AS $$
WITH s AS (
    SELECT id, tenant_id, account_id, period_start, period_end FROM statements WHERE id = ANY(ids)
),
l AS (
    SELECT s.id AS statement_id, t.id, t.posted_on, t.kind, t.amount, t.merchant, t.description
    FROM s JOIN transactions t ON t.account_id = s.account_id AND t.posted_on BETWEEN s.period_start AND s.period_end
),
per_label AS (
    SELECT statement_id, kind, line_label(kind, merchant, description) AS label, SUM(amount) AS amount,
           COUNT(*) AS n
    FROM l GROUP BY 1, 2, 3
),
totals AS (
    SELECT statement_id, SUM(CASE WHEN kind IN ('refund', 'payment') THEN -amount ELSE amount END) AS net,
           json_agg(json_build_object('kind', kind, 'label', label, 'amount', amount, 'lines', n)
                    ORDER BY kind, label) AS totals
    FROM per_label GROUP BY statement_id
),
ranked AS (
    SELECT l.*,
           count(*) FILTER (WHERE kind <> 'payment') OVER w AS charge_rank,
           count(*) FILTER (WHERE kind IN ('fee', 'interest')) OVER w AS fee_rank
    FROM l
    WINDOW w AS (PARTITION BY statement_id ORDER BY abs(amount) DESC, posted_on, id ROWS UNBOUNDED PRECEDING)
),
named AS (
    SELECT statement_id,
           json_agg(json_build_object('id', id, 'posted_on', posted_on, 'kind', kind, 'amount', amount,
                                      'merchant', merchant, 'description', description)
                    ORDER BY abs(amount) DESC, posted_on, id) AS lines
    FROM ranked
    WHERE (kind <> 'payment' AND charge_rank <= 12) OR (kind IN ('fee', 'interest') AND fee_rank <= 24)
    GROUP BY statement_id
)
INSERT INTO statement_summaries AS ss (statement_id, tenant_id, net, totals, lines)
SELECT s.id, s.tenant_id, COALESCE(totals.net, 0), COALESCE(totals.totals, '[]'), COALESCE(named.lines, '[]')
FROM s LEFT JOIN totals ON totals.statement_id = s.id LEFT JOIN named ON named.statement_id = s.id
ON CONFLICT (statement_id) DO UPDATE SET net = EXCLUDED.net, totals = EXCLUDED.totals, lines = EXCLUDED.lines
$$"""

# The tenants whose rows changed (joined to tenants: a tenant being deleted cascades here too).
LEDGER_CHANGED = """
CREATE FUNCTION ledger_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO ledger_versions AS v (tenant_id, version)
        SELECT t.id, 1 FROM tenants t WHERE t.id IN (SELECT tenant_id FROM old_rows)
        ON CONFLICT (tenant_id) DO UPDATE SET version = v.version + 1;
    ELSE
        INSERT INTO ledger_versions AS v (tenant_id, version)
        SELECT t.id, 1 FROM tenants t WHERE t.id IN (SELECT tenant_id FROM new_rows)
        ON CONFLICT (tenant_id) DO UPDATE SET version = v.version + 1;
    END IF;
    RETURN NULL;
END $$"""

LEDGER = ("customers", "accounts", "statements", "transactions")
# (trigger name, event, its transition table): Postgres allows a transition table on one event only.
EVENTS = (
    ("inserted", "INSERT", "NEW TABLE AS new_rows"),
    ("updated", "UPDATE", "NEW TABLE AS new_rows"),
    ("deleted", "DELETE", "OLD TABLE AS old_rows"),
)

UPGRADE = [
    "ALTER TABLE statement_summaries ALTER COLUMN totals TYPE json USING CAST(totals AS json), "
    "ALTER COLUMN lines TYPE json USING CAST(lines AS json)",
    # Read by key only: ANALYZE need not read (and decompress) a sample of them.
    "ALTER TABLE statement_summaries ALTER COLUMN totals SET STATISTICS 0, ALTER COLUMN lines SET STATISTICS 0",
    REFRESH,
    """CREATE TABLE ledger_versions (
    tenant_id bigint PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    version bigint NOT NULL
)""",
    """CREATE TABLE bulk_loads (
    tenant_id bigint PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    digest bytea NOT NULL,          -- sha256 of the files' table names and bytes, in load order
    counts jsonb NOT NULL,          -- {table: rows} of that load
    ledger_version bigint NOT NULL, -- the tenant's ledger_versions.version as the load committed
    loaded_at timestamptz NOT NULL DEFAULT now()
)""",
    LEDGER_CHANGED,
    *(
        f"CREATE TRIGGER {table}_ledger_{name} AFTER {event} ON {table} REFERENCING {transition} "
        "FOR EACH STATEMENT EXECUTE FUNCTION ledger_changed()"
        for table in LEDGER
        for name, event, transition in EVENTS
    ),
]


def upgrade() -> None:
    for statement in UPGRADE:  # one at a time: asyncpg runs a single command per call
        op.execute(statement)


def downgrade() -> None:
    spec = importlib.util.spec_from_file_location("m0011", Path(__file__).with_name("0011_statement_summaries.py"))
    assert spec is not None
    assert spec.loader is not None
    before = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(before)  # 0011's refresh, restored as it was
    for table in LEDGER:
        for name, _, _ in EVENTS:
            op.execute(f"DROP TRIGGER {table}_ledger_{name} ON {table}")
    op.execute("DROP FUNCTION ledger_changed()")
    op.execute("DROP TABLE bulk_loads")
    op.execute("DROP TABLE ledger_versions")
    op.execute(
        "ALTER TABLE statement_summaries ALTER COLUMN totals TYPE jsonb USING CAST(totals AS jsonb), "
        "ALTER COLUMN lines TYPE jsonb USING CAST(lines AS jsonb), "
        "ALTER COLUMN totals SET STATISTICS -1, ALTER COLUMN lines SET STATISTICS -1"
    )
    op.execute(before.REFRESH.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1))
