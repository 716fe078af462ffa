"""statement summaries: what an answer reads of a statement, kept exact by triggers

Revision ID: 0011
Revises: 0010

An answer used to read every line of two statements (and sum every line of the account's history
for the opening balances), so its cost grew with a statement's length. Now each statement has one
`statement_summaries` row: its signed net, its totals by kind and label (the drivers and the labels a
question may name come from these), and the lines an answer may name (the largest charges, the fees
and interest). The numbers mirror app/domain/facts.py `summarize`; a property test checks that they
equal a recomputation from the lines after any sequence of imports and corrections.

Transactions lose their own foreign key to tenants, which their account's already implies.

The per-row trigger of 0004 becomes per statement (transition tables): a bulk load of a million lines
bumps and refreshes each touched statement once, not once per line. Semantics are unchanged: a
changed line bumps the statements ending on or after its day, a changed payment bumps them all, and
an identical re-import writes nothing, so bumps and refreshes nothing.
"""

from __future__ import annotations

from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels = None
depends_on = None

# Python's str.strip() whitespace (app/domain/facts.py `_label`), for btrim.
_SPACES = r"E'\t\n\u000b\f\r\u001c\u001d\u001e\u001f \u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000'"

# A line's label as the customer sees it: a fee by its description, anything else by its merchant.
LINE_LABEL = f"""
CREATE FUNCTION line_label(kind text, merchant text, description text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT btrim(CASE WHEN kind = 'fee' THEN COALESCE(NULLIF(description, ''), merchant, '')
                      ELSE COALESCE(NULLIF(merchant, ''), description, '') END, {_SPACES})
$$"""

# Set-based, so that refreshing the statements of a bulk load is one pass over their lines (a hash
# join), and refreshing one statement an index range scan. 12 and 24: app/domain/facts.py
# NAMED_CHARGES and NAMED_FEES.
REFRESH = """
CREATE FUNCTION refresh_statement_summaries(ids bigint[]) RETURNS void LANGUAGE sql AS $$
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
           jsonb_agg(jsonb_build_object('kind', kind, 'label', label, 'amount', amount, 'lines', n)
                     ORDER BY kind, label) AS totals
    FROM per_label GROUP BY statement_id
),
ranked AS (
    SELECT l.*,
           row_number() OVER (PARTITION BY statement_id, kind <> 'payment' ORDER BY abs(amount) DESC, posted_on, id)
               AS charge_rank,
           row_number() OVER (PARTITION BY statement_id, kind IN ('fee', 'interest')
                              ORDER BY abs(amount) DESC, posted_on, id) AS fee_rank
    FROM l
),
named AS (
    SELECT statement_id,
           jsonb_agg(jsonb_build_object('id', id, 'posted_on', posted_on, 'kind', kind, 'amount', amount,
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

# The changed lines of one statement (SQL), per account: their first and last day and whether a
# payment is among them. Bumps what 0004 bumped and refreshes the summaries whose period they touch.
LINES_CHANGED = """
CREATE FUNCTION statement_lines_changed(spans jsonb) RETURNS void LANGUAGE sql AS $$
WITH span AS (
    SELECT * FROM jsonb_to_recordset(spans) AS x(account_id bigint, first_day date, last_day date, payment boolean)
),
bumped AS (
    UPDATE statements s SET data_version = s.data_version + 1
    FROM span
    WHERE s.account_id = span.account_id AND (span.payment OR s.period_end >= span.first_day)
    RETURNING s.id, s.period_start <= span.last_day AND s.period_end >= span.first_day AS touched
)
SELECT refresh_statement_summaries(ARRAY(SELECT id FROM bumped WHERE touched))
$$"""

# One row per account for statement_lines_changed; nothing when no line changed.
_PERFORM = """PERFORM statement_lines_changed(jsonb_agg(jsonb_build_object(
            'account_id', account_id, 'first_day', first_day, 'last_day', last_day, 'payment', payment)))
        FROM (SELECT account_id, MIN(posted_on) AS first_day, MAX(posted_on) AS last_day,
                     bool_or(kind = 'payment') AS payment
              FROM {rows} GROUP BY account_id) per_account
        HAVING COUNT(*) > 0;"""

TRANSACTIONS_CHANGED = f"""
CREATE FUNCTION transactions_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        {_PERFORM.format(rows="new_rows")}
    ELSIF TG_OP = 'DELETE' THEN
        {_PERFORM.format(rows="old_rows")}
    ELSE
        {_PERFORM.format(rows="(SELECT * FROM old_rows UNION ALL SELECT * FROM new_rows) AS changed")}
    END IF;
    RETURN NULL;
END $$"""

STATEMENTS_CHANGED = """
CREATE FUNCTION statements_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM refresh_statement_summaries(ARRAY(SELECT id FROM new_rows));
    ELSE
        PERFORM refresh_statement_summaries(ARRAY(
            SELECT n.id FROM new_rows n JOIN old_rows o ON o.id = n.id
            WHERE (n.period_start, n.period_end, n.account_id) IS DISTINCT FROM (o.period_start, o.period_end, o.account_id)));
    END IF;
    RETURN NULL;
END $$"""

# 0004's per-line trigger, for downgrade.
BUMP_PER_LINE = """
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
END $$"""

UPGRADE = [
    # Redundant: (tenant_id, account_id) references accounts, whose tenant_id references tenants (and
    # cascades). A bulk load paid a second foreign-key check per line for it (about 7 us a line).
    "ALTER TABLE transactions DROP CONSTRAINT fk_transactions_tenant_id_tenants",
    """CREATE TABLE statement_summaries (
    statement_id bigint PRIMARY KEY,
    tenant_id bigint NOT NULL,
    net numeric(18, 2) NOT NULL,  -- 14 digits a line; a statement of many lines sums to more
    totals jsonb NOT NULL,        -- [{kind, label, amount, lines}], one per kind and label
    lines jsonb NOT NULL,         -- the lines an answer may name, the largest first
    CONSTRAINT fk_statement_summaries_tenant_id_statement_id_statements FOREIGN KEY (tenant_id, statement_id)
        REFERENCES statements (tenant_id, id) ON DELETE CASCADE
)""",
    LINE_LABEL,
    REFRESH,
    LINES_CHANGED,
    TRANSACTIONS_CHANGED,
    "DROP TRIGGER transactions_bump_statements ON transactions",
    "DROP FUNCTION bump_statements_for_transaction()",
    """CREATE TRIGGER transactions_inserted AFTER INSERT ON transactions REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION transactions_changed()""",
    """CREATE TRIGGER transactions_updated AFTER UPDATE ON transactions
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION transactions_changed()""",
    """CREATE TRIGGER transactions_deleted AFTER DELETE ON transactions REFERENCING OLD TABLE AS old_rows
FOR EACH STATEMENT EXECUTE FUNCTION transactions_changed()""",
    STATEMENTS_CHANGED,
    """CREATE TRIGGER statements_inserted AFTER INSERT ON statements REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION statements_changed()""",
    """CREATE TRIGGER statements_updated AFTER UPDATE ON statements
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION statements_changed()""",
    "SELECT refresh_statement_summaries(ARRAY(SELECT id FROM statements))",
]


def upgrade() -> None:
    for statement in UPGRADE:  # one at a time: asyncpg runs a single command per call
        op.execute(statement)


def downgrade() -> None:
    for statement in [
        "DROP TRIGGER statements_updated ON statements",
        "DROP TRIGGER statements_inserted ON statements",
        "DROP FUNCTION statements_changed()",
        "DROP TRIGGER transactions_deleted ON transactions",
        "DROP TRIGGER transactions_updated ON transactions",
        "DROP TRIGGER transactions_inserted ON transactions",
        "DROP FUNCTION transactions_changed()",
        "DROP FUNCTION statement_lines_changed(jsonb)",
        "DROP FUNCTION refresh_statement_summaries(bigint[])",
        "DROP FUNCTION line_label(text, text, text)",
        "DROP TABLE statement_summaries",
        "ALTER TABLE transactions ADD CONSTRAINT fk_transactions_tenant_id_tenants FOREIGN KEY (tenant_id) "
        "REFERENCES tenants (id) ON DELETE CASCADE",
    ]:
        op.execute(statement)
    op.execute(BUMP_PER_LINE)
    op.execute(
        "CREATE TRIGGER transactions_bump_statements AFTER INSERT OR UPDATE OR DELETE ON transactions "
        "FOR EACH ROW EXECUTE FUNCTION bump_statements_for_transaction()"
    )
