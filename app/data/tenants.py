"""Tenants and their API keys. A key is shown once, when it is issued; only its digest is stored."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec
from sqlalchemy import func, insert, select, text, update
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
    # The API key it authenticated with (None: the tenant acting for work it asked for earlier).
    key_id: int | None = None


class KeyInfo(msgspec.Struct, frozen=True, kw_only=True):
    """An API key as operators see it: never the key, only its first characters."""

    prefix: str
    label: str
    created_at: datetime
    revoked_at: datetime | None


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


async def own_answer_policies(conn: AsyncConnection) -> dict[int, TenantPolicy]:
    """The policies of the tenants with an answer policy of their own, by tenant id."""
    rows = await conn.execute(select(Tenant.id, Tenant.name, Tenant.policy).where(Tenant.policy.has_key("answers")))
    return {row.id: msgspec.convert({"brand": row.name, **row.policy}, TenantPolicy) for row in rows}


async def tenant_id(conn: AsyncConnection, slug: str) -> int | None:
    return (await conn.execute(select(Tenant.id).where(Tenant.slug == slug))).scalar_one_or_none()


async def issue_api_key(conn: AsyncConnection, tenant: int, label: str = "") -> str:
    key = KEY_PREFIX + new_token()
    await conn.execute(insert(ApiKey).values(tenant_id=tenant, prefix=key[:10], key_hash=digest(key), label=label))
    return key


async def list_keys(conn: AsyncConnection, tenant: int) -> list[KeyInfo]:
    rows = await conn.execute(
        select(ApiKey.prefix, ApiKey.label, ApiKey.created_at, ApiKey.revoked_at)
        .where(ApiKey.tenant_id == tenant)
        .order_by(ApiKey.created_at, ApiKey.id)
    )
    return [KeyInfo(prefix=r.prefix, label=r.label, created_at=r.created_at, revoked_at=r.revoked_at) for r in rows]


async def revoke_key(conn: AsyncConnection, tenant: int, prefix: str) -> KeyInfo:
    """Revoke the tenant's live key with that prefix: refused from then on (within the key cache's
    TTL), and so are the chat tokens it issued. LookupError: no such key, or it is revoked already."""
    keys = [k for k in await list_keys(conn, tenant) if k.prefix == prefix]
    if not keys:
        raise LookupError(f"the tenant has no API key with prefix {prefix!r}")
    if all(k.revoked_at is not None for k in keys):
        raise LookupError(f"the API key {prefix!r} is already revoked")
    row = (
        await conn.execute(
            update(ApiKey)
            .where(ApiKey.tenant_id == tenant, ApiKey.prefix == prefix, ApiKey.revoked_at.is_(None))
            .values(revoked_at=func.now())
            .returning(ApiKey.prefix, ApiKey.label, ApiKey.created_at, ApiKey.revoked_at)
        )
    ).first()
    assert row is not None  # a live one was there, and this transaction holds its row now
    return KeyInfo(prefix=row.prefix, label=row.label, created_at=row.created_at, revoked_at=row.revoked_at)


# Text SQL: on the hot path, building a Core select per call costs more than the query itself.
_COLUMNS = (
    "t.id AS tenant_id, t.slug AS tenant_slug, t.priority_class, t.name, t.policy::text AS policy,"
    " t.weight, t.max_concurrency, t.rate_limit_per_s"
)
_AUTHENTICATE = text(f"""
SELECT {_COLUMNS}, k.id AS key_id
FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
WHERE k.key_hash = :key_hash AND k.revoked_at IS NULL
""")
_LIVE_KEY = text(f"""
SELECT {_COLUMNS}, k.id AS key_id
FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
WHERE k.id = :key_id AND k.tenant_id = :tenant_id AND k.revoked_at IS NULL
""")
_NEWEST_LIVE_KEY = text(f"""
SELECT {_COLUMNS}, k.id AS key_id
FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
WHERE t.slug = :slug AND k.revoked_at IS NULL
ORDER BY k.id DESC LIMIT 1
""")


_PRINCIPAL = text(f"SELECT {_COLUMNS} FROM tenants t WHERE t.id = :tenant_id")


async def principal_for(conn: AsyncConnection, tenant: int) -> Principal | None:
    """The tenant as a caller, for work it asked for earlier (batch jobs, precomputation)."""
    return _principal((await conn.execute(_PRINCIPAL, {"tenant_id": tenant})).first())


async def principal_for_key(conn: AsyncConnection, tenant: int, key_id: int) -> Principal | None:
    """The tenant as the caller of one of its API keys, while that key is live (chat tokens it issued)."""
    return _principal((await conn.execute(_LIVE_KEY, {"tenant_id": tenant, "key_id": key_id})).first())


async def principal_with_live_key(conn: AsyncConnection, slug: str) -> Principal | None:
    """The tenant as the caller of its newest live API key (the demo page); None without one."""
    return _principal((await conn.execute(_NEWEST_LIVE_KEY, {"slug": slug})).first())


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
        key_id=row._mapping.get("key_id"),
    )
