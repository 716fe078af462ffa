"""shared admission state: every replica's tenant rate limits, tenant concurrency caps and the
engine's capacity counted in one place (app/data/admission.py)

The tables are UNLOGGED: admission state is live and short-lived (leases expire within seconds of
their replica's last renewal), so it needs no WAL — a commit does not wait for a disk flush, which
keeps the cluster-wide lock held only for the length of the function — and after a crash Postgres
empties them, which is what a restarted fleet wants anyway.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels = None
depends_on = None

# One call, one round trip, one transaction. Statements inside a VOLATILE plpgsql function each take
# a fresh snapshot, so the counts read after a lock is granted include everything committed before.
# Locks in one order, the tenant's bucket row then the engine's advisory lock: no deadlocks.
ENTER = """
CREATE FUNCTION admission_enter(
    p_tenant text, p_rate float8, p_take_token boolean,
    p_want_slot boolean, p_max_concurrency integer, p_slots integer,
    p_lease text, p_replica text, p_ttl_s float8
) RETURNS TABLE (verdict text, retry_after_s float8)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    t timestamptz;
    burst float8 := greatest(p_rate, 1);
    have float8;
    last timestamptz;
    running integer;
BEGIN
    -- The tenant's row, created full on first use, locked until the end of the call.
    INSERT INTO admission_bucket AS b (tenant, tokens, updated) VALUES (p_tenant, burst, clock_timestamp())
    ON CONFLICT (tenant) DO UPDATE SET tenant = b.tenant
    RETURNING b.tokens, b.updated INTO have, last;
    t := clock_timestamp();  -- read under the lock: the calls see time in the order they hold it
    IF p_take_token THEN
        have := least(burst, have + extract(epoch FROM t - last) * p_rate);
        IF have < 1 THEN
            UPDATE admission_bucket SET tokens = have, updated = t WHERE tenant = p_tenant;
            RETURN QUERY SELECT 'rate_limited'::text, (1 - have) / p_rate;
            RETURN;
        END IF;
        UPDATE admission_bucket SET tokens = have - 1, updated = t WHERE tenant = p_tenant;
    END IF;
    IF NOT p_want_slot THEN
        RETURN QUERY SELECT 'queued'::text, 0::float8;
        RETURN;
    END IF;
    SELECT count(*) INTO running FROM admission_lease WHERE tenant = p_tenant AND expires_at > t;
    IF running >= p_max_concurrency THEN
        RETURN QUERY SELECT 'tenant_busy'::text, 0::float8;
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('bill_assistant.admission.engine'));
    SELECT count(*) INTO running FROM admission_lease WHERE expires_at > t;
    IF running >= p_slots THEN
        RETURN QUERY SELECT 'engine_busy'::text, 0::float8;
        RETURN;
    END IF;
    INSERT INTO admission_lease (id, tenant, replica, expires_at)
    VALUES (p_lease, p_tenant, p_replica, t + make_interval(secs => p_ttl_s));
    RETURN QUERY SELECT 'granted'::text, 0::float8;
END
$$
"""


def upgrade() -> None:
    op.create_table(
        "admission_bucket",
        sa.Column("tenant", sa.Text(), nullable=False),
        sa.Column("tokens", sa.Float(), nullable=False),
        sa.Column("updated", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tenant", name=op.f("pk_admission_bucket")),
        prefixes=["UNLOGGED"],
    )
    op.create_table(
        "admission_lease",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("tenant", sa.Text(), nullable=False),
        sa.Column("replica", sa.Text(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_admission_lease")),
        prefixes=["UNLOGGED"],
    )
    op.create_index("ix_admission_lease_tenant", "admission_lease", ["tenant"])
    op.create_index("ix_admission_lease_replica", "admission_lease", ["replica"])
    op.execute(ENTER)


def downgrade() -> None:
    op.execute("DROP FUNCTION admission_enter")
    op.execute("DROP TABLE admission_lease")
    op.execute("DROP TABLE admission_bucket")
