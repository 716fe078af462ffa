"""Batch jobs in Postgres: they survive restarts, and every item ends with a result or an error."""

from __future__ import annotations

import uuid
from typing import Any

import msgspec
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.errors import IdempotencyMismatch


class ClaimedItem(msgspec.Struct, frozen=True, kw_only=True):
    job_id: uuid.UUID
    idx: int
    tenant_id: int
    request: dict[str, Any]


async def create_job(
    conn: AsyncConnection, tenant_id: int, idempotency_key: str | None, items: list[dict[str, Any]]
) -> tuple[uuid.UUID, bool]:
    """A new job, or the tenant's existing job with the same idempotency key; (id, created).
    IdempotencyMismatch when that job was asked for with other items (compared as JSON values)."""
    job_id = uuid.uuid4()
    inserted = (
        await conn.execute(
            text(
                "INSERT INTO jobs (id, tenant_id, idempotency_key, total) VALUES (:id, :t, :key, :total)"
                " ON CONFLICT (tenant_id, idempotency_key) DO NOTHING RETURNING id"
            ),
            {"id": job_id, "t": tenant_id, "key": idempotency_key, "total": len(items)},
        )
    ).first()
    if inserted is None:  # the same key again: the job it made the first time, for the same items
        existing = (
            await conn.execute(
                text(
                    "SELECT j.id, COALESCE(jsonb_agg(i.request ORDER BY i.idx)"
                    " FILTER (WHERE i.idx IS NOT NULL), '[]') = CAST(:items AS jsonb) AS same"
                    " FROM jobs j LEFT JOIN job_items i ON i.job_id = j.id"
                    " WHERE j.tenant_id = :t AND j.idempotency_key = :key GROUP BY j.id"
                ),
                {"t": tenant_id, "key": idempotency_key, "items": msgspec.json.encode(items).decode()},
            )
        ).one()
        if not existing.same:
            raise IdempotencyMismatch(
                f"Idempotency-Key {idempotency_key!r} was used with a different request body (job {existing.id})"
            )
        return existing.id, False
    await conn.execute(
        text(
            "INSERT INTO job_items (job_id, idx, tenant_id, request)"
            " SELECT :id, ordinality - 1, :t, value FROM jsonb_array_elements(CAST(:items AS jsonb)) WITH ORDINALITY"
        ),
        {"id": job_id, "t": tenant_id, "items": msgspec.json.encode(items).decode()},
    )
    return job_id, True


async def job_view(conn: AsyncConnection, tenant_id: int, job_id: uuid.UUID) -> dict[str, Any] | None:
    """Progress and results, scoped by tenant (another tenant's job is simply not found)."""
    row = (
        await conn.execute(
            text(
                """
                SELECT json_build_object(
                  'job_id', j.id, 'total', j.total, 'created_at', j.created_at,
                  'done', count(*) FILTER (WHERE i.status = 'done'),
                  'failed', count(*) FILTER (WHERE i.status = 'error'),
                  'items', COALESCE(json_agg(json_build_object('index', i.idx, 'status', i.status,
                                    'answer', i.result, 'error', i.error) ORDER BY i.idx), '[]'))::text
                FROM jobs j JOIN job_items i ON i.job_id = j.id
                WHERE j.id = :id AND j.tenant_id = :t
                GROUP BY j.id
                """
            ),
            {"id": job_id, "t": tenant_id},
        )
    ).first()
    if row is None:
        return None
    view: dict[str, Any] = msgspec.json.decode(row[0])
    pending = view["total"] - view["done"] - view["failed"]
    view["status"] = "done" if pending == 0 else ("queued" if pending == view["total"] else "running")
    return view


async def claim_items(conn: AsyncConnection, limit: int, lease_s: float) -> list[ClaimedItem]:
    """Take up to `limit` pending items, oldest job first, for `lease_s` seconds. A worker that dies
    loses its lease, and the items are taken again: every item is answered at least once."""
    rows = await conn.execute(
        text(
            """
            UPDATE job_items i SET claimed_until = now() + make_interval(secs => :lease)
            FROM (SELECT i2.job_id, i2.idx FROM job_items i2 JOIN jobs j ON j.id = i2.job_id
                  WHERE i2.status = 'pending' AND (i2.claimed_until IS NULL OR i2.claimed_until < now())
                  ORDER BY j.created_at, i2.idx LIMIT :limit FOR UPDATE OF i2 SKIP LOCKED) picked
            WHERE i.job_id = picked.job_id AND i.idx = picked.idx
            RETURNING i.job_id, i.idx, i.tenant_id, i.request::text AS request
            """
        ),
        {"limit": limit, "lease": lease_s},
    )
    return [
        ClaimedItem(job_id=row.job_id, idx=row.idx, tenant_id=row.tenant_id, request=msgspec.json.decode(row.request))
        for row in rows
    ]


async def finish_item(conn: AsyncConnection, item: ClaimedItem, result_json: str | None, error: str | None) -> None:
    await conn.execute(
        text(
            "UPDATE job_items SET status = :status, result = CAST(:result AS jsonb), error = :error,"
            " claimed_until = NULL WHERE job_id = :job AND idx = :idx"
        ),
        {"status": "error" if error else "done", "result": result_json, "error": error}
        | {"job": item.job_id, "idx": item.idx},
    )


async def release_item(conn: AsyncConnection, item: ClaimedItem) -> None:
    """Give an item back (the engine was busy): another pass will take it."""
    await conn.execute(
        text("UPDATE job_items SET claimed_until = NULL WHERE job_id = :job AND idx = :idx"),
        {"job": item.job_id, "idx": item.idx},
    )
