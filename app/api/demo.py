"""GET /demo: a demo bank's page embedding the chat widget, for the demo (DEMO_PAGE=1) only.

It plays the bank's backend too: it asks for the customer's session token server-side, exactly as
a bank would, and puts only that token in the page."""

from __future__ import annotations

from litestar import get
from litestar.di import NamedDependency
from litestar.params import FromQuery
from litestar.response import Template
from sqlalchemy.ext.asyncio import AsyncEngine

from app import locales
from app.api.customer_session import start_session
from app.data.database import autocommit
from app.data.tenants import principal_with_live_key
from app.demo import TENANTS
from app.errors import NotFound
from app.settings import Settings


@get("/demo", include_in_schema=False)
async def demo_page(
    db_engine: NamedDependency[AsyncEngine],
    settings: NamedDependency[Settings],
    bank: FromQuery[str] = TENANTS[0].slug,
    customer: FromQuery[str] = "C-1001",
    locale: FromQuery[str | None] = None,
) -> Template:
    """`locale`: the page's language, as a bank's page sets it (the customer's by default)."""
    async with autocommit(db_engine) as conn:
        # The page plays the bank's backend: it asks for the token with the bank's newest live key.
        principal = await principal_with_live_key(conn, bank)
    if principal is None:
        raise NotFound(f"no bank {bank!r} with a live API key")
    session = await start_session(db_engine, settings, principal, customer)
    page_locale = locale if locale in locales.locales() else session.locale
    words = locales.words(page_locale)["demo"]
    context = {"brand": principal.policy.brand, "session": session, "locale": page_locale, "words": words}
    return Template("demo.html", context=context)
