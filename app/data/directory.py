"""The tenant's customers as its agents look them up: by reference or name, with their accounts; and all
of them at once, as the traffic export masks their names."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from sqlalchemy import or_, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.data.customers import AccountSummary
from app.data.models import Account, Customer
from app.domain.vocabulary import Locale

SEARCH_LIMIT = 20  # customers per search: an agent narrows the term rather than pages through


class CustomerMatch(msgspec.Struct, frozen=True, kw_only=True):
    ref: str
    name: str
    locale: Locale
    accounts: list[AccountSummary]


class AccountOverview(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    ref: str
    kind: str
    currency: str
    masked_number: str
    customer_ref: str
    customer_name: str
    customer_locale: Locale


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
        customer = found.setdefault(row.id, CustomerMatch(ref=row.ref, name=row.name, locale=row.locale, accounts=[]))
        if row.account_ref is not None:
            customer.accounts.append(
                AccountSummary(
                    account_ref=row.account_ref, kind=row.kind, currency=row.currency, masked_number=row.masked_number
                )
            )
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
                Customer.ref.label("customer_ref"),
                Customer.name.label("customer_name"),
                Customer.locale.label("customer_locale"),
            )
            .join(Customer, (Customer.tenant_id == Account.tenant_id) & (Customer.id == Account.customer_id))
            .where(Account.tenant_id == tenant_id, Account.ref == account_ref)
        )
    ).first()
    return AccountOverview(**row._mapping) if row is not None else None


class TenantPeople(msgspec.Struct, frozen=True, kw_only=True):
    """What masks a tenant's exported questions (app/pii/masker.py): every customer's name, and the
    currencies of its accounts (their regions' phone numbers)."""

    names: list[str]
    currencies: list[str]


_PEOPLE = text("""
SELECT t.slug,
       ARRAY(SELECT c.name FROM customers c WHERE c.tenant_id = t.id ORDER BY c.id) AS names,
       ARRAY(SELECT DISTINCT a.currency FROM accounts a WHERE a.tenant_id = t.id ORDER BY 1) AS currencies
FROM tenants t
WHERE t.slug = ANY(:slugs)
""")


async def tenant_people(conn: AsyncConnection, slugs: Sequence[str]) -> dict[str, TenantPeople]:
    """Each tenant's people, by slug, in one statement: every customer, not only those who asked."""
    rows = await conn.execute(_PEOPLE, {"slugs": list(slugs)})
    return {row.slug: TenantPeople(names=list(row.names), currencies=list(row.currencies)) for row in rows}
