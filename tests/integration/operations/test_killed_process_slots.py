"""A process killed mid-burst (SIGKILL: no shutdown, no give-back) leaves its engine slots in the
shared ledger. They stop counting when its heartbeat lapses (app/data/admission.py), so a restart
serves at once instead of waiting for the dead process's leases to expire."""

from __future__ import annotations

import asyncio
import signal
import time
from typing import Any

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.data.admission import ALIVE_TTL_S
from app.data.tenants import set_limits
from bench.fakes.sglang_server import RunningFake, Script
from tests.factories import document
from tests.servers import free_port, start_service, stop_service, wait_until_healthy
from tests.waiting import until

QUESTION = {"account_ref": "A-1", "question": "Why is my bill higher than last month?", "as_of": "2026-11-10"}
CAP = 4


async def test_a_killed_processs_slots_are_free_within_seconds_of_its_restart(
    database_url: str, make_tenant: Any, load: Any, engine: AsyncEngine, fake_sglang: RunningFake
) -> None:
    bank = await make_tenant(priority_class="interactive")
    await load(document(bank.slug))
    async with engine.begin() as conn:
        await set_limits(conn, bank.slug, {"rate_limit_per_s": 1000, "max_concurrency": CAP})
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        "DATABASE_URL": database_url, "ENGINE": "sglang", "SGLANG_URL": fake_sglang.url, "ADMISSION": "shared",
        "ANSWER_CACHE_FILL": "0", "BATCH_WORKER": "0", "LOG_LEVEL": "WARNING", "SESSION_SECRET": "restart-secret",
    }  # fmt: skip
    headers = {"Authorization": f"Bearer {bank.key}"}
    held = text("SELECT count(*) FROM admission_lease WHERE tenant = :t")

    async def leases() -> int:
        async with engine.connect() as conn:
            return int((await conn.execute(held, {"t": bank.slug})).scalar_one())

    async def has_cap() -> bool:
        return await leases() == CAP

    fake_sglang.fake.default = Script(hang_s=60)  # the burst's answers hold their slots
    first = start_service(port, "--workers", "1", **env)  # one process: SIGKILL kills the server itself
    try:
        await wait_until_healthy(first, url)
        async with httpx.AsyncClient(base_url=url, timeout=60, headers=headers) as http:
            burst = [asyncio.create_task(http.post("/v1/explanations", json=QUESTION)) for _ in range(CAP)]
            await until("the burst to hold every slot", lambda: has_cap(), timeout_s=20)
            first.send_signal(signal.SIGKILL)
            first.wait(10)
            await asyncio.gather(*burst, return_exceptions=True)
    finally:
        stop_service(first)
    assert await leases() == CAP  # nothing gave them back

    fake_sglang.fake.default = Script()
    second = start_service(port, "--workers", "1", **env)
    try:
        await wait_until_healthy(second, url)
        restarted = time.monotonic()
        async with httpx.AsyncClient(base_url=url, timeout=30, headers=headers) as http:
            responses = await asyncio.gather(*(http.post("/v1/explanations", json=QUESTION) for _ in range(3 * CAP)))
        waited = time.monotonic() - restarted
    finally:
        stop_service(second)
    assert [r.status_code for r in responses] == [200] * (3 * CAP)
    # Answered by the engine (then its cache), never the fallback a request gets when no slot frees.
    assert [r.json()["source"] for r in responses].count("fallback") == 0
    # The dead process's leases ran for 15 s more; only its lapsed heartbeat freed them. The
    # restart itself took longer than ALIVE_TTL_S, so nothing here should wait at all; a margin for
    # a loaded test machine.
    assert waited < ALIVE_TTL_S + 3, waited
