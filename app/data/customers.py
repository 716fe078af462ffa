"""A customer's own view: their language, which accounts are theirs (always within a tenant)."""

from __future__ import annotations

import msgspec
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.domain.vocabulary import Locale


class AccountSummary(msgspec.Struct, frozen=True, kw_only=True):
    """An account as its owner and the bank's agents pick it from a list."""

    account_ref: str
    kind: str
    currency: str
    masked_number: str


_LOCALE = text("SELECT locale FROM customers WHERE tenant_id = :tenant_id AND ref = :ref")
_ACCOUNTS = text("""
SELECT a.ref AS account_ref, a.kind, a.currency, a.masked_number
FROM accounts a JOIN customers c ON c.tenant_id = a.tenant_id AND c.id = a.customer_id
WHERE a.tenant_id = :tenant_id AND c.ref = :ref
ORDER BY a.ref
""")


async def customer_locale(conn: AsyncConnection, tenant_id: int, customer_ref: str) -> Locale | None:
    """The customer's language; None when the tenant has no such customer."""
    locale: Locale | None = (await conn.execute(_LOCALE, {"tenant_id": tenant_id, "ref": customer_ref})).scalar()
    return locale


async def customer_accounts(conn: AsyncConnection, tenant_id: int, customer_ref: str) -> list[AccountSummary]:
    rows = await conn.execute(_ACCOUNTS, {"tenant_id": tenant_id, "ref": customer_ref})
    return [AccountSummary(**row._mapping) for row in rows]
