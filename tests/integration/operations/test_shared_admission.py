"""One admission policy across replicas (app/data/admission.py): a tenant's rate limit and
concurrency cap, and the engine's capacity, hold for every replica on the database together."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.data.admission import PostgresLedger
from app.data.tenants import set_limits
from app.domain.priority import TenantLimits, Verdict
from app.errors import Shed
from app.inference.scheduler import Scheduler
from bench.fakes.sglang_server import FakeSGLang, Script
from tests.factories import document
from tests.servers import ThreadedServer, free_port, start_service, wait_until_healthy

QUESTION = {"account_ref": "A-1", "question": "Why is my bill higher than last month?", "as_of": "2026-11-10"}


@pytest.fixture
async def ledgers(database_url: str) -> AsyncIterator[Callable[..., Awaitable[PostgresLedger]]]:
    """Ledgers as separate replicas would hold them: each its own pool and name."""
    opened: list[PostgresLedger] = []

    async def open_one(**options: Any) -> PostgresLedger:
        ledger = PostgresLedger(database_url, **options)
        await ledger.open()
        opened.append(ledger)
        return ledger

    yield open_one
    for ledger in opened:
        await ledger.close()


def tenant() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


async def slot(ledger: PostgresLedger, name: str, limits: TenantLimits, lease: str) -> Verdict:
    """Ask for a slot alone (no rate token), as a queued request does."""
    verdict, _ = await ledger.enter(name, limits, take_token=False, want_slot=True, slots=1000, lease=lease)
    return verdict


async def enter_all(
    ledgers: list[PostgresLedger], tenants: list[str], limits: TenantLimits, *, slots: int = 1000, take_token: bool
) -> list[Verdict]:
    """Every (ledger, tenant) pair asks at the same moment, once per tenant listed."""
    calls = [
        ledgers[i % len(ledgers)].enter(
            name, limits, take_token=take_token, want_slot=not take_token, slots=slots, lease=uuid.uuid4().hex
        )
        for i, name in enumerate(tenants)
    ]
    return [verdict for verdict, _ in await asyncio.gather(*calls)]


async def test_a_tenants_cap_holds_across_replicas_under_a_race(ledgers: Any, engine: AsyncEngine) -> None:
    a, b = await ledgers(), await ledgers()
    name, limits = tenant(), TenantLimits(max_concurrency=4)
    verdicts = await enter_all([a, b], [name] * 40, limits, take_token=False)
    assert verdicts.count("granted") == 4
    assert verdicts.count("tenant_busy") == 36

    lease = uuid.uuid4().hex
    assert await slot(b, name, limits, lease) == "tenant_busy"
    async with engine.connect() as conn:
        held = (await conn.execute(text("SELECT id FROM admission_lease WHERE tenant = :t"), {"t": name})).scalars()
        await a.leave(held.first())  # one request ends: exactly one more fits, on either replica
    assert await slot(b, name, limits, lease) == "granted"
    assert await slot(a, name, limits, "x" + lease) == "tenant_busy"


async def test_the_engine_capacity_is_shared_not_multiplied(ledgers: Any, engine: AsyncEngine) -> None:
    a, b = await ledgers(), await ledgers()
    async with engine.connect() as conn:
        held = (
            await conn.execute(
                text(
                    "SELECT count(*) FROM admission_lease l JOIN admission_replica r USING (replica)"
                    " WHERE l.expires_at > now() AND r.alive_until > now()"
                )
            )
        ).scalar_one()
    slots = held + 3  # three free slots in the whole fleet, whatever other tests still hold
    verdicts = await enter_all([a, b], [tenant() for _ in range(12)], TenantLimits(), slots=slots, take_token=False)
    assert verdicts.count("granted") == 3
    assert verdicts.count("engine_busy") == 9


async def test_a_tenants_rate_is_one_bucket_for_every_replica(ledgers: Any) -> None:
    a, b = await ledgers(), await ledgers()
    name, limits = tenant(), TenantLimits(rate_per_s=5)
    verdicts = await enter_all([a, b], [name] * 20, limits, take_token=True)
    assert verdicts.count("queued") == 5  # the burst: one second's worth
    assert verdicts.count("rate_limited") == 15
    verdict, retry_after = await a.enter(name, limits, take_token=True, want_slot=False, slots=1000, lease="-")
    assert verdict == "rate_limited"
    assert 0 < retry_after <= 0.2  # a token comes every 1/5 s


async def test_a_killed_replicas_slots_stop_counting_when_it_stops_beating_a_live_ones_are_kept(
    ledgers: Any, engine: AsyncEngine
) -> None:
    name, limits = tenant(), TenantLimits(max_concurrency=1)
    dead = f"dead-{uuid.uuid4().hex[:8]}"
    async with engine.begin() as conn:  # what a killed process leaves: a fresh lease, and its last beat
        await conn.execute(
            text("INSERT INTO admission_replica VALUES (:replica, clock_timestamp() + interval '0.5 s')"),
            {"replica": dead},
        )
        await conn.execute(
            text("INSERT INTO admission_lease VALUES (:id, :tenant, :replica, clock_timestamp() + interval '15 s')"),
            {"id": uuid.uuid4().hex, "tenant": name, "replica": dead},
        )
    live = await ledgers(lease_ttl_s=0.6, alive_ttl_s=0.6)
    assert await slot(live, name, limits, "l1") == "tenant_busy"
    await asyncio.sleep(0.7)  # the lease has 14 s to run, but nobody beats for it
    assert await slot(live, name, limits, "l1") == "granted"
    await asyncio.sleep(1.5)  # more than twice both TTLs: only the live replica's beats and renewals keep it
    other = await ledgers()
    assert await slot(other, name, limits, "l2") == "tenant_busy"


async def test_a_queued_request_takes_a_slot_freed_by_another_replica(ledgers: Any) -> None:
    name, limits = tenant(), TenantLimits(max_concurrency=1, rate_per_s=100)
    first = Scheduler(capacity=100, ledger=await ledgers())
    second = Scheduler(capacity=100, ledger=await ledgers())
    held, release = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with first.admit(name, limits, level=2, deadline_s=5):
            held.set()
            await release.wait()

    holder = asyncio.create_task(hold())
    await held.wait()
    with pytest.raises(Shed) as shed:  # the only slot is held on the other replica
        async with second.admit(name, limits, level=2, deadline_s=0.2):
            pass
    assert shed.value.status == 503
    assert shed.value.reason == "deadline"

    async def waiter() -> float:
        async with second.admit(name, limits, level=2, deadline_s=5) as admission:
            return admission.wait_s

    waiting = asyncio.create_task(waiter())
    await asyncio.sleep(0.3)
    assert not waiting.done()
    released = time.monotonic()
    release.set()
    await holder
    assert await waiting >= 0.3
    assert time.monotonic() - released < 0.5  # found within a few polls, not at the deadline
    assert second.in_flight == 0


async def test_a_slot_that_cannot_be_given_back_does_not_fail_the_answer_and_expires(
    ledgers: Any, engine: AsyncEngine
) -> None:
    name, held_name, limits = tenant(), tenant(), TenantLimits(max_concurrency=1)
    ledger = await ledgers(lease_ttl_s=0.6)
    scheduler = Scheduler(capacity=100, ledger=ledger)
    assert await slot(ledger, held_name, limits, "still-running") == "granted"  # renewed throughout
    admitted, done, finished = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def answer() -> None:
        async with scheduler.admit(name, limits, level=2, deadline_s=1):
            admitted.set()
            await done.wait()
        finished.set()

    task = asyncio.create_task(answer())
    await admitted.wait()
    async with engine.connect() as blocker, engine.connect() as admin:
        # Hold the lease's row, so that giving it back waits; then the ledger's connection dies.
        async with blocker.begin():
            await blocker.execute(text("SELECT id FROM admission_lease WHERE tenant = :t FOR UPDATE"), {"t": name})
            done.set()
            waiting = text(
                "SELECT pid FROM pg_stat_activity WHERE application_name = 'admission'"
                " AND datname = current_database() AND wait_event_type = 'Lock'"
            )
            for _ in range(200):
                pids = (await admin.execute(waiting)).scalars().all()
                if pids:
                    break
                await asyncio.sleep(0.01)
            assert len(pids) == 1
            await admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pids[0]})
            await asyncio.wait_for(finished.wait(), 5)
        await task  # the answer ended normally
    assert scheduler.in_flight == 0
    other = await ledgers()
    assert await slot(other, name, limits, "o1") == "tenant_busy"  # the lease is still there ...
    await asyncio.sleep(1.5)
    assert await slot(other, name, limits, "o2") == "granted"  # ... but nobody renewed it
    assert await slot(other, held_name, limits, "o3") == "tenant_busy"  # while the running one was


class CountingEngine:
    """The fake SGLang server, counting how many /generate requests it serves at once."""

    def __init__(self, fake: FakeSGLang) -> None:
        self.fake = fake
        self.now = 0
        self.peak = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != "/generate":
            return await self.fake(scope, receive, send)
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            await self.fake(scope, receive, send)
        finally:
            self.now -= 1


async def test_two_app_processes_hold_one_tenants_rate_and_cap(
    database_url: str, make_tenant: Any, load: Any, engine: AsyncEngine
) -> None:
    """Two `bill-assistant serve` processes on one database, a tenant limited to 10 requests/s and
    4 at once, both hammered: the admitted rate stays within 10% of 10/s, and the engine never sees
    more than 4 of the tenant's requests at once (each process alone would allow 10/s and 4)."""
    bank = await make_tenant(priority_class="interactive")
    await load(document(bank.slug))
    async with engine.begin() as conn:
        await set_limits(conn, bank.slug, {"rate_limit_per_s": 10, "max_concurrency": 4})
    counting = CountingEngine(FakeSGLang(default=Script(token_delay_s=0.0)))
    sglang = ThreadedServer(counting, lifespan="off")
    env = {
        "DATABASE_URL": database_url, "ENGINE": "sglang", "SGLANG_URL": sglang.url, "ADMISSION": "shared",
        "ANSWER_CACHE_FILL": "0", "BATCH_WORKER": "0", "LOG_LEVEL": "WARNING", "API_KEY_CACHE_TTL": "0",
        "SESSION_SECRET": "replicas-secret",
    }  # fmt: skip
    ports = [free_port(), free_port()]
    services = [start_service(port, **env) for port in ports]
    headers = {"Authorization": f"Bearer {bank.key}"}
    try:
        urls = [f"http://127.0.0.1:{port}" for port in ports]
        await asyncio.gather(*(wait_until_healthy(s, u) for s, u in zip(services, urls, strict=True)))
        async with httpx.AsyncClient(timeout=30, headers=headers) as http:
            for url in urls * 2:  # warm both replicas up (connections, caches): 4 of the bucket's 10
                assert (await http.post(f"{url}/v1/explanations", json=QUESTION)).status_code == 200
            await asyncio.sleep(1.2)  # the bucket is full again
            clock = text("SELECT extract(epoch FROM clock_timestamp())")
            async with engine.connect() as conn:
                began = float((await conn.execute(clock)).scalar_one())

            # The rate: 60 requests/s for 4.5 s, alternating between the replicas (open loop).
            start = time.monotonic()
            sends = [i / 60 for i in range(270)]

            async def send(i: int, at: float) -> int:
                await asyncio.sleep(max(0.0, start + at - time.monotonic()))
                return (await http.post(f"{urls[i % 2]}/v1/explanations", json=QUESTION)).status_code

            statuses = await asyncio.gather(*(send(i, at) for i, at in enumerate(sends)))
            assert set(statuses) == {200, 429}
            # When the answers were given, by the database's clock (the audit rows): the bucket's
            # burst of 10 at once, then 10/s — however late a busy machine served the requests.
            async with engine.connect() as conn:
                query = text("SELECT extract(epoch FROM created_at) FROM answers WHERE tenant_id = :t AND created_at > "
                             "to_timestamp(:began) ORDER BY 1")  # fmt: skip
                answered = [float(t) for t in (await conn.execute(query, {"t": bank.id, "began": began})).scalars()]
            assert len(answered) == statuses.count(200)
            assert 9.0 <= (len(answered) - 10) / (answered[-1] - began) <= 11.0

            # The cap: each answer takes 0.5 s at the engine; 16 at once, 8 to each replica.
            counting.fake.default = Script(hang_s=0.5, token_delay_s=0.0)
            await asyncio.sleep(1.1)  # a full bucket again
            async with engine.begin() as conn:
                await set_limits(conn, bank.slug, {"rate_limit_per_s": 100})
            await asyncio.sleep(0.2)
            counting.peak = 0
            responses = await asyncio.gather(
                *(http.post(f"{urls[i % 2]}/v1/explanations", json=QUESTION) for i in range(16))
            )
            assert [r.status_code for r in responses] == [200] * 16
            assert counting.peak == 4
    finally:
        for service in services:
            service.terminate()
        for service in services:
            service.wait(30)
        sglang.stop()
