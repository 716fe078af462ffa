"""The service opens no more Postgres sessions than its three pools hold (docs/data.md, "Three
pools"), however many requests it answers: no pool, and no connection, is made per request."""

from __future__ import annotations

import asyncio
from typing import Any

from litestar.testing import AsyncTestClient
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.app import create_app
from app.data.database import connection_budget
from app.settings import Settings
from tests.factories import document
from tests.waiting import until

# Sessions ever opened to the database (Postgres 14+), counted as each backend reports its stats.
_SESSIONS = text("SELECT sessions FROM pg_stat_database WHERE datname = :db")
ENV = {"ENGINE": "off", "DB_POOL_SIZE": "2", "DB_MAX_OVERFLOW": "0", "ADMISSION": "shared", "ADMISSION_POOL_SIZE": "1"}
ENV["SESSION_SECRET"] = "pools-test-secret-" + "x" * 32  # shared admission: replicas share one
REQUESTS = 40


async def test_many_requests_open_no_more_sessions_than_the_pools_hold(
    database_url: str, engine: AsyncEngine, make_tenant: Any, load: Any
) -> None:
    tenant = await make_tenant()
    await load(document(tenant.slug))
    settings = Settings.from_env(ENV)
    budget = connection_budget(settings)
    assert (budget.main, budget.overflow, budget.answers, budget.admission) == (2, 0, 2, 1)
    database = make_url(database_url).database

    async def sessions() -> int:
        async with engine.connect() as conn:  # a connection the fixture's pool already holds
            await conn.execute(text("SELECT pg_stat_clear_snapshot()"))
            return int((await conn.execute(_SESSIONS, {"db": database})).scalar_one())

    await asyncio.sleep(1.1)  # the fixtures' own sessions have reported theirs (at most once a second)
    before = await sessions()
    async with AsyncTestClient(app=create_app(settings, database_url)) as client:

        async def ask() -> None:
            r = await client.post(
                "/v1/explanations",
                json={"account_ref": "A-1", "question": "why is my bill higher?"},
                headers={"Authorization": f"Bearer {tenant.key}"},
            )
            assert r.status_code == 200, r.text

        for _ in range(REQUESTS // 5):  # five at a time, under the tenant's 20 requests/s
            await asyncio.gather(*(ask() for _ in range(5)), asyncio.sleep(0.3))

    # Every session the app opened closed with it, and a session that ends reports itself.
    async def reported() -> bool:
        return await sessions() > before

    await until("the app's sessions to be counted", reported)
    await asyncio.sleep(1.0)  # and the last of them
    assert await sessions() - before <= budget.total
