"""The tenant's customers as its agents look them up: by reference or name, with their accounts."""

from __future__ import annotations

import msgspec
from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.answers.schemas import AccountOut
from app.data.models import Account, Customer

SEARCH_LIMIT = 20  # customers per search: an agent narrows the term rather than pages through


class CustomerMatch(msgspec.Struct, frozen=True):
    ref: str
    name: str
    locale: str
    accounts: list[AccountOut]


class AccountOverview(msgspec.Struct, frozen=True):
    id: int
    ref: str
    kind: str
    currency: str
    masked_number: str
    customer_ref: str
    customer_name: str
    customer_locale: str


def _contains(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


async def search_customers(
    conn: AsyncConnection, tenant_id: int, term: str, limit: int = SEARCH_LIMIT
) -> list[CustomerMatch]:
    """Customers whose reference or name contains `term` (any case), with their accounts."""
    pattern = _contains(term.strip())
    matches = (
        select(Customer.id, Customer.ref, Customer.name, Customer.locale)
        .where(
            Customer.tenant_id == tenant_id,
            or_(Customer.ref.ilike(pattern, escape="\\"), Customer.name.ilike(pattern, escape="\\")),
        )
        .order_by(Customer.ref)
        .limit(limit)
        .subquery()
    )
    rows = await conn.execute(
        select(matches, Account.ref.label("account_ref"), Account.kind, Account.currency, Account.masked_number)
        .outerjoin(Account, (Account.tenant_id == tenant_id) & (Account.customer_id == matches.c.id))
        .order_by(matches.c.ref, Account.ref)
    )
    found: dict[int, CustomerMatch] = {}
    for row in rows:
        customer = found.setdefault(row.id, CustomerMatch(row.ref, row.name, row.locale, []))
        if row.account_ref is not None:
            customer.accounts.append(AccountOut(row.account_ref, row.kind, row.currency, row.masked_number))
    return list(found.values())


async def account_overview(conn: AsyncConnection, tenant_id: int, account_ref: str) -> AccountOverview | None:
    """The account and whose it is; None for an unknown account, or another tenant's."""
    row = (
        await conn.execute(
            select(
                Account.id,
                Account.ref,
                Account.kind,
                Account.currency,
                Account.masked_number,
                Customer.ref,
                Customer.name,
                Customer.locale,
            )
            .join(Customer, (Customer.tenant_id == Account.tenant_id) & (Customer.id == Account.customer_id))
            .where(Account.tenant_id == tenant_id, Account.ref == account_ref)
        )
    ).first()
    return AccountOverview(*row) if row is not None else None
