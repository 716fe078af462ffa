"""A customer's own view: does the customer exist, which accounts are theirs (always within a tenant)."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.answers.schemas import AccountOut

_EXISTS = text("SELECT 1 FROM customers WHERE tenant_id = :tenant_id AND ref = :ref")
_ACCOUNTS = text("""
SELECT a.ref, a.kind, a.currency, a.masked_number
FROM accounts a JOIN customers c ON c.tenant_id = a.tenant_id AND c.id = a.customer_id
WHERE a.tenant_id = :tenant_id AND c.ref = :ref
ORDER BY a.ref
""")


async def customer_exists(conn: AsyncConnection, tenant_id: int, customer_ref: str) -> bool:
    return (await conn.execute(_EXISTS, {"tenant_id": tenant_id, "ref": customer_ref})).first() is not None


async def customer_accounts(conn: AsyncConnection, tenant_id: int, customer_ref: str) -> list[AccountOut]:
    rows = await conn.execute(_ACCOUNTS, {"tenant_id": tenant_id, "ref": customer_ref})
    return [AccountOut(*row) for row in rows]
