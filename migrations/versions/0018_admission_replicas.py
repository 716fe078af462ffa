"""admission: each process's heartbeat, so a killed process's engine slots are free within seconds

Revision ID: 0018
Revises: 0017

A lease counted only while its replica's heartbeat row is fresh (ALIVE_TTL_S, a beat every
fraction of it): a SIGKILLed process stops beating and its slots stop counting within about two
seconds, where the lease's own expiry (15 s, kept for leases a live replica failed to give back)
held them before. UNLOGGED like the other admission tables (migration 0009 says why).
"""

from __future__ import annotations

from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels = None
depends_on = None

# Migration 0009's function, counting only the leases of replicas that are alive.
ALIVE = "\n    JOIN admission_replica r ON r.replica = l.replica AND r.alive_until > t"
ENTER = """
CREATE OR REPLACE FUNCTION admission_enter(
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
    INSERT INTO admission_bucket AS b (tenant, tokens, updated) VALUES (p_tenant, burst, clock_timestamp())
    ON CONFLICT (tenant) DO UPDATE SET tenant = b.tenant
    RETURNING b.tokens, b.updated INTO have, last;
    t := clock_timestamp();
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
    SELECT count(*) INTO running FROM admission_lease l{ALIVE}
    WHERE l.tenant = p_tenant AND l.expires_at > t;
    IF running >= p_max_concurrency THEN
        RETURN QUERY SELECT 'tenant_busy'::text, 0::float8;
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('bill_assistant.admission.engine'));
    SELECT count(*) INTO running FROM admission_lease l{ALIVE}
    WHERE l.expires_at > t;
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
    op.execute("""CREATE UNLOGGED TABLE admission_replica (
    replica text PRIMARY KEY,
    alive_until timestamptz NOT NULL
)""")
    op.execute(ENTER.replace("{ALIVE}", ALIVE))


def downgrade() -> None:
    op.execute(ENTER.replace("{ALIVE}", ""))  # 0009's counts: every lease until it expires
    op.execute("DROP TABLE admission_replica")
