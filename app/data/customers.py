"""A customer's own view: their language, which accounts are theirs (always within a tenant)."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.answers.schemas import AccountOut

_LOCALE = text("SELECT locale FROM customers WHERE tenant_id = :tenant_id AND ref = :ref")
_ACCOUNTS = text("""
SELECT a.ref, a.kind, a.currency, a.masked_number
FROM accounts a JOIN customers c ON c.tenant_id = a.tenant_id AND c.id = a.customer_id
WHERE a.tenant_id = :tenant_id AND c.ref = :ref
ORDER BY a.ref
""")


async def customer_locale(conn: AsyncConnection, tenant_id: int, customer_ref: str) -> str | None:
    """The customer's language; None when the tenant has no such customer."""
    locale: str | None = (await conn.execute(_LOCALE, {"tenant_id": tenant_id, "ref": customer_ref})).scalar()
    return locale


async def customer_accounts(conn: AsyncConnection, tenant_id: int, customer_ref: str) -> list[AccountOut]:
    rows = await conn.execute(_ACCOUNTS, {"tenant_id": tenant_id, "ref": customer_ref})
    return [AccountOut(*row) for row in rows]
