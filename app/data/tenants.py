"""Tenants and their API keys. A key is shown once, when it is issued; only its digest is stored."""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy import insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from app.data.models import ApiKey, Tenant
from app.domain.policy import TenantPolicy
from app.domain.priority import TenantLimits
from app.domain.vocabulary import PRIORITY_CLASSES, PriorityClass
from app.errors import AlreadyExists
from app.security import digest, new_token

KEY_PREFIX = "ba_"


class Principal(msgspec.Struct, frozen=True, kw_only=True):
    """Who is calling: the tenant an API key belongs to, with the policy its answers follow."""

    tenant_id: int
    tenant_slug: str
    priority_class: PriorityClass
    policy: TenantPolicy
    limits: TenantLimits


async def create_tenant(
    conn: AsyncConnection, slug: str, name: str, priority_class: str, policy: dict[str, Any] | None = None
) -> int:
    if priority_class not in PRIORITY_CLASSES:
        raise ValueError(f"priority class must be one of {', '.join(PRIORITY_CLASSES)}")
    if await tenant_id(conn, slug) is not None:
        raise AlreadyExists(f"tenant {slug!r} already exists")
    if policy:
        msgspec.convert({"brand": name, **policy}, TenantPolicy)  # refuse an unknown or malformed key now
    result = await conn.execute(
        insert(Tenant)
        .values(slug=slug, name=name, priority_class=priority_class, policy=policy or {})
        .returning(Tenant.id)
    )
    return result.scalar_one()


LIMIT_COLUMNS = ("priority_class", "weight", "max_concurrency", "rate_limit_per_s")


async def set_limits(conn: AsyncConnection, slug: str, changes: dict[str, Any]) -> dict[str, Any]:
    """Change a tenant's priority class and admission limits; returns them all."""
    if unknown := set(changes) - set(LIMIT_COLUMNS):
        raise ValueError(f"unknown limits: {sorted(unknown)}")
    columns = [getattr(Tenant, c) for c in LIMIT_COLUMNS]
    statement = update(Tenant).where(Tenant.slug == slug).values(**changes).returning(*columns)
    row = (await conn.execute(statement if changes else select(*columns).where(Tenant.slug == slug))).first()
    if row is None:
        raise LookupError(f"unknown tenant {slug!r}")
    return dict(zip(LIMIT_COLUMNS, row, strict=True))


async def set_policy(conn: AsyncConnection, slug: str, changes: dict[str, Any]) -> TenantPolicy:
    """Update some policy fields of a tenant; returns the policy its answers now follow."""
    row = (await conn.execute(select(Tenant.name, Tenant.policy).where(Tenant.slug == slug))).first()
    if row is None:
        raise LookupError(f"unknown tenant {slug!r}")
    policy = {**row.policy, **changes}
    effective = msgspec.convert({"brand": row.name, **policy}, TenantPolicy)
    await conn.execute(update(Tenant).where(Tenant.slug == slug).values(policy=policy))
    return effective


async def tenant_id(conn: AsyncConnection, slug: str) -> int | None:
    return (await conn.execute(select(Tenant.id).where(Tenant.slug == slug))).scalar_one_or_none()


async def issue_api_key(conn: AsyncConnection, tenant: int, label: str = "") -> str:
    key = KEY_PREFIX + new_token()
    await conn.execute(insert(ApiKey).values(tenant_id=tenant, prefix=key[:10], key_hash=digest(key), label=label))
    return key


# Text SQL: on the hot path, building a Core select per call costs more than the query itself.
_COLUMNS = (
    "t.id AS tenant_id, t.slug AS tenant_slug, t.priority_class, t.name, t.policy::text AS policy,"
    " t.weight, t.max_concurrency, t.rate_limit_per_s"
)
_AUTHENTICATE = text(f"""
SELECT {_COLUMNS}
FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
WHERE k.key_hash = :key_hash AND k.revoked_at IS NULL
""")


_PRINCIPAL = text(f"SELECT {_COLUMNS} FROM tenants t WHERE t.id = :tenant_id")


async def principal_for(conn: AsyncConnection, tenant: int) -> Principal | None:
    """The tenant as a caller, for work it asked for earlier (batch jobs, precomputation)."""
    return _principal((await conn.execute(_PRINCIPAL, {"tenant_id": tenant})).first())


async def authenticate(conn: AsyncConnection, key: str) -> Principal | None:
    if not key.startswith(KEY_PREFIX):
        return None
    return _principal((await conn.execute(_AUTHENTICATE, {"key_hash": digest(key)})).first())


def _principal(row: Any) -> Principal | None:
    if row is None:
        return None
    policy = msgspec.json.decode(row.policy, type=dict[str, Any])
    return Principal(
        tenant_id=row.tenant_id,
        tenant_slug=row.tenant_slug,
        priority_class=row.priority_class,
        policy=msgspec.convert({"brand": row.name, **policy}, TenantPolicy),
        limits=TenantLimits(weight=row.weight, max_concurrency=row.max_concurrency, rate_per_s=row.rate_limit_per_s),
    )
