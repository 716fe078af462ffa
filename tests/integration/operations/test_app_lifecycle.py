"""An app that shuts down gives its database connections back (tests build dozens of apps)."""

from __future__ import annotations

from typing import Any

from litestar.testing import AsyncTestClient
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.app import create_app
from app.settings import Settings
from tests.factories import document

_OPEN = text("SELECT count(*) FROM pg_stat_activity WHERE datname = :db AND application_name = 'bill-assistant'")


async def test_shutdown_closes_the_connection_pool(
    database_url: str, engine: AsyncEngine, make_tenant: Any, load: Any
) -> None:
    tenant = await make_tenant()
    await load(document(tenant.slug))
    database = make_url(database_url).database

    async def open_connections() -> int:
        async with engine.connect() as conn:
            return int((await conn.execute(_OPEN, {"db": database})).scalar_one())

    before = await open_connections()
    # Twice: the SQLAlchemy plugin keys the second app's engine differently from the first's.
    for _ in range(2):
        app = create_app(Settings.from_env({"ENGINE": "off"}), database_url)
        async with AsyncTestClient(app=app) as client:
            r = await client.post(
                "/v1/explanations",
                json={"account_ref": "A-1", "question": "why?"},
                headers={"Authorization": f"Bearer {tenant.key}"},
            )
            assert r.status_code == 200
            assert await open_connections() > before  # the request used the app's pool
        assert await open_connections() == before
