"""The answer cache filled on schedule: one replica at a time holds the fill lease, and with two
`serve` processes each recently closed statement's canonical questions are answered once."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import date, timedelta
from typing import Any

import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.answers.cache_fill import CacheFiller
from app.api.app import create_app
from app.data.database import create_engine
from app.data.fill_leader import hold, let_go
from app.data.tenants import create_tenant, issue_api_key
from app.locales import CANONICAL_QUESTIONS
from app.settings import Settings
from bench.fakes.plans import GOOD
from bench.fakes.sglang_server import RunningFake, Script
from tests.factories import account, customer, document, import_document, statement
from tests.metrics import sample
from tests.postgres import new_database
from tests.servers import free_port, start_service, stop_service, wait_until_healthy
from tests.waiting import until


async def test_one_replica_holds_the_fill_lease_and_another_takes_over_when_it_runs_out(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        await let_go(conn, "a")
        await let_go(conn, "b")
        assert [await hold(conn, "a", 0.3), await hold(conn, "b", 0.3), await hold(conn, "a", 0.3)] == [
            True,
            False,
            True,
        ]
        await asyncio.sleep(0.4)  # a stopped renewing: its lease ran out
        assert [await hold(conn, "b", 0.3), await hold(conn, "a", 0.3)] == [True, False]
        await let_go(conn, "b")  # a clean shutdown hands it on at once
        assert await hold(conn, "a", 0.3)
        await let_go(conn, "a")


@pytest.fixture
def scratch_url() -> Iterator[str]:
    """A database of its own: the fill looks at every tenant's recent statements."""
    with new_database() as url:
        yield url


def _recent(end: date) -> dict[str, Any]:
    start = end.replace(day=1)
    return statement(start.isoformat(), end.isoformat(), (end + timedelta(days=25)).isoformat())


async def test_two_replicas_fill_each_recently_closed_statement_once(
    scratch_url: str, fake_sglang: RunningFake
) -> None:
    closed = date.today() - timedelta(days=3)
    before = closed.replace(day=1) - timedelta(days=1)
    statements = [_recent(before), _recent(closed)]
    engine = create_engine(scratch_url)
    async with engine.begin() as conn:
        tenant = await create_tenant(conn, "fill-bank", "Fill Bank", "standard")
        await issue_api_key(conn, tenant)
        people = [customer(accounts=[account("A-1", statements=statements)])]
        people.append(customer("C-2", "zh-CN", [account("A-2", "CNY", statements=statements)]))
        await import_document(conn, document("fill-bank", people))

    async def fills() -> list[tuple[str, str]]:
        async with engine.connect() as conn:
            rows = await conn.execute(text("SELECT question, locale FROM answers WHERE origin = 'fill' ORDER BY 1, 2"))
            return [(question, locale) for question, locale in rows.all()]

    env = {
        "DATABASE_URL": scratch_url, "ENGINE": "sglang", "SGLANG_URL": fake_sglang.url, "ADMISSION": "shared",
        "SESSION_SECRET": "fill-secret", "BATCH_WORKER": "0", "ANSWER_CACHE_FILL": "0", "CACHE_FILL_INTERVAL_S": "0.3",
    }  # fmt: skip
    ports = [free_port(), free_port()]
    replicas = [start_service(port, **env) for port in ports]
    try:
        for proc, port in zip(replicas, ports, strict=True):
            await wait_until_healthy(proc, f"http://127.0.0.1:{port}")

        async def six() -> bool:
            return len(await fills()) >= 6

        await until("the six canonical answers", six, timeout_s=30)
        await asyncio.sleep(1.5)  # several more passes of both replicas
        filled, asked = await fills(), len(fake_sglang.fake.requests)
    finally:  # (a replica that stops hands the lease on: the other may fill again while it stops)
        stop_service(*replicas)
        await engine.dispose()
    # Each account's latest statement, each intent, its customer's locale: once, by one replica.
    expected = [(CANONICAL_QUESTIONS[intent]["en"], "en") for intent in CANONICAL_QUESTIONS]
    expected += [(CANONICAL_QUESTIONS[intent]["zh-CN"], "zh-CN") for intent in CANONICAL_QUESTIONS]
    assert filled == sorted(expected)
    assert asked == 6


async def test_a_pass_reports_its_backlog_and_does_not_ask_again(scratch_url: str, fake_sglang: RunningFake) -> None:
    closed = date.today() - timedelta(days=3)
    engine = create_engine(scratch_url)
    async with engine.begin() as conn:
        await create_tenant(conn, "backlog-bank", "Backlog Bank", "standard")
        await import_document(
            conn, document("backlog-bank", [customer(accounts=[account(statements=[_recent(closed)])])])
        )
    await engine.dispose()
    fake_sglang.fake.default = Script(text=GOOD, hang_s=0.2)
    settings = Settings.from_env({"ENGINE": "sglang", "SGLANG_URL": fake_sglang.url, "BATCH_WORKER": "0"})
    async with AsyncTestClient(app=create_app(settings, scratch_url)) as client:
        filler = CacheFiller(client.app.state.answers, interval_s=1.0)
        run = asyncio.create_task(filler.run_once(date.today()))
        await until("the first canonical question at the engine", lambda: len(fake_sglang.fake.requests) == 1)
        assert sample("bill_assistant_cache_fill_backlog") == 3  # one statement, three intents, none made yet
        assert await run == 3
        assert sample("bill_assistant_cache_fill_backlog") == 0
        # The bill-change answer validated and is cached; the others fell back: not asked again.
        assert await filler.run_once(date.today()) == 0
    assert len(fake_sglang.fake.requests) == 3


async def test_the_fill_has_a_budget_of_its_own_never_the_tenants(scratch_url: str, fake_sglang: RunningFake) -> None:
    """The fill holds slots and rate tokens under its own name (CACHE_FILL_*), shared by every
    replica through the ledger: a tenant's customers keep its whole concurrency cap and rate."""
    closed = date.today() - timedelta(days=3)
    engine = create_engine(scratch_url)
    async with engine.begin() as conn:
        await create_tenant(conn, "budget-bank", "Budget Bank", "standard")
        await import_document(
            conn, document("budget-bank", [customer(accounts=[account(statements=[_recent(closed)])])])
        )

    async def leases() -> dict[str, int]:
        async with engine.connect() as conn:
            rows = await conn.execute(text("SELECT tenant, count(*) FROM admission_lease GROUP BY tenant"))
            return {tenant: count for tenant, count in rows.all()}

    async def made() -> list[float]:
        async with engine.connect() as conn:
            query = text("SELECT extract(epoch FROM created_at) FROM answers WHERE origin = 'fill' ORDER BY 1")
            return [float(t) for t in (await conn.execute(query)).scalars()]

    async def filling() -> bool:
        return bool(await leases())

    async def three() -> bool:
        return len(await made()) == 3

    fake_sglang.fake.default = Script(text=GOOD, hang_s=0.5)
    env = {
        "DATABASE_URL": scratch_url, "ENGINE": "sglang", "SGLANG_URL": fake_sglang.url, "ADMISSION": "shared",
        "SESSION_SECRET": "budget-secret", "BATCH_WORKER": "0", "ANSWER_CACHE_FILL": "0",
        "CACHE_FILL_INTERVAL_S": "0.3", "CACHE_FILL_SLOTS": "1", "CACHE_FILL_RATE_PER_S": "1",
    }  # fmt: skip
    port = free_port()
    proc = start_service(port, "--workers", "1", **env)
    try:
        await wait_until_healthy(proc, f"http://127.0.0.1:{port}")
        await until("a canonical answer at the engine", filling, timeout_s=30)
        assert await leases() == {"~cache-fill": 1}  # the tenant holds nothing: its cap is its customers'
        await until("the statement's three canonical answers", three, timeout_s=30)
        async with engine.connect() as conn:
            buckets = await conn.execute(text("SELECT tenant FROM admission_bucket ORDER BY 1"))
            assert buckets.scalars().all() == ["~cache-fill"]  # not a token of the tenant's rate
    finally:
        stop_service(proc)
        await engine.dispose()
    first, _, last = await made()
    assert last - first >= 1.8  # one a second (each took 0.5 s at the engine): paced by the fill's own rate
