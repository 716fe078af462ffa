"""A real `serve --workers 2` under concurrent load holds no more Postgres connections than it says
at start (workers × the per-process budget), counted in pg_stat_activity on a database of its own."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from app.data.database import create_engine
from app.data.tenants import create_tenant, issue_api_key, set_limits
from tests.factories import account, customer, document, import_document
from tests.postgres import admin_url, new_database
from tests.servers import free_port, start_service, stop_service, wait_until_healthy

# Per process: 2 (main pool) + 1 (overflow) + 2 (answer path) + 1 (admission ledger) = 6.
BUDGET = {"DB_POOL_SIZE": "2", "DB_MAX_OVERFLOW": "1", "ADMISSION_POOL_SIZE": "1"}
QUESTION = "Why is my bill higher than last month?"


@pytest.fixture
def budget_url() -> Iterator[str]:
    with new_database() as url:
        yield url


@pytest.fixture
async def scratch(budget_url: str) -> tuple[str, str]:
    """A migrated database with one bank, no connection of the test's left on it; (url, key)."""
    engine = create_engine(budget_url)
    async with engine.begin() as conn:
        tenant = await create_tenant(conn, "budget", "Budget Bank", "interactive")
        key = await issue_api_key(conn, tenant, "test")
        await set_limits(conn, "budget", {"rate_limit_per_s": 10_000, "max_concurrency": 1_000})
        accounts = [account(f"A-{i}") for i in range(1, 9)]
        await import_document(conn, document("budget", [customer(accounts=accounts)]))
    await engine.dispose()
    return budget_url, key


async def test_a_server_holds_no_more_connections_than_its_budget(scratch: tuple[str, str]) -> None:
    url, key = scratch
    database = make_url(url).database
    port = free_port()
    # No engine: answers take milliseconds, so the load is all database work (the ledger's pool
    # opens its first connection at start all the same); every request looks its key up.
    # LOG_LEVEL=WARNING: the output is read only at the end; 180 request lines would fill the pipe
    # (64 KiB) and block the server's logging, and with it the server.
    env = {
        "DATABASE_URL": url,
        "ENGINE": "off",
        "API_KEY_CACHE_TTL": "0",
        "MAX_IN_FLIGHT": "1000",
        "LOG_LEVEL": "WARNING",
    }
    proc = start_service(port, "--workers", "2", **env, **BUDGET, BATCH_POLL_S="0.05", METRICS_TOKEN="")
    counter = create_async_engine(admin_url(), isolation_level="AUTOCOMMIT", pool_size=1)
    count = text("SELECT count(*) FROM pg_stat_activity WHERE datname = :db")
    seen: list[int] = []
    done = asyncio.Event()

    async def sample() -> None:
        async with counter.connect() as conn:
            while not done.is_set():
                seen.append((await conn.execute(count, {"db": database})).scalar_one())
                await asyncio.sleep(0.01)

    async def fresh(method: str, path: str, **kwargs: Any) -> int:
        """A new connection each: the kernel spreads them over both workers."""
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            r = await http.request(method, path, headers={"Authorization": f"Bearer {key}"}, **kwargs)
            return r.status_code

    try:
        await wait_until_healthy(proc, f"http://127.0.0.1:{port}")
        sampler = asyncio.create_task(sample())
        for _ in range(3):
            work = [
                fresh("POST", "/v1/explanations", json={"account_ref": f"A-{i % 8 + 1}", "question": QUESTION})
                for i in range(60)
            ]
            items = [{"account_ref": f"A-{i}"} for i in range(1, 9)]
            work.append(fresh("POST", "/v1/explanations:batch", json={"items": items}))
            statuses = await asyncio.gather(*work)
            assert sorted(set(statuses)) == [200, 202]
        await asyncio.sleep(0.5)  # the batch job's items
        done.set()
        await sampler
        proc.send_signal(signal.SIGTERM)
        output, _ = await asyncio.to_thread(proc.communicate, timeout=60)
    finally:
        done.set()
        await counter.dispose()
        stop_service(proc)
    assert "database connections: at most 12 (2 workers x 6 per process)" in output.decode()
    assert max(seen) <= 12, seen  # measured: 12, the budget reached and never passed
    assert max(seen) > 6, "the load never went past one process's budget: the bound was not tested"
