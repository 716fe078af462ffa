"""SIGTERM with a hung engine: the real `bill-assistant serve` exits within DRAIN_TIMEOUT_S + 2 s;
what was in the engine is answered with the deterministic text at the drain deadline, audited, and
its engine request aborted; what was queued for the engine gets 503 `shutting_down` with Retry-After."""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from typing import Any

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.fakes.sglang_server import RunningFake, Script
from tests.factories import document
from tests.servers import free_port, start_service, wait_until_healthy
from tests.waiting import until

DRAIN_S = 3.0
QUESTIONS = ["Why is my bill higher than last month?", "Did my payment arrive?", "What is the gym charge?"]


async def test_sigterm_with_a_hung_engine_answers_in_flight_requests_and_exits_in_time(
    database_url: str, engine: AsyncEngine, make_tenant: Any, load: Any, fake_sglang: RunningFake, client: Any
) -> None:
    tenant = await make_tenant(priority_class="interactive")
    await load(document(tenant.slug))
    headers = {"Authorization": f"Bearer {tenant.key}"}
    asks = [{"account_ref": "A-1", "question": q, "as_of": "2026-11-10"} for q in QUESTIONS]
    # The deterministic texts, from an app without a model.
    expected = [(await client.post("/v1/explanations", json=a, headers=headers)).json()["explanation"] for a in asks]
    fake_sglang.fake.default = Script(hang_s=60)  # the engine never answers

    port = free_port()
    proc = start_service(
        port,
        DATABASE_URL=database_url,
        ENGINE="sglang",
        SGLANG_URL=fake_sglang.url,
        DRAIN_TIMEOUT_S=str(DRAIN_S),
        API_KEY_CACHE_TTL="0",
        BATCH_WORKER="0",
        ANSWER_CACHE_FILL="0",
        ENGINE_CAPACITY=str(len(asks)),  # the request after those waits in the admission queue
        QUEUE_DEADLINE_SCALE="100",  # ... long enough for the signal to find it there
        METRICS_TOKEN="",
    )
    url = f"http://127.0.0.1:{port}"
    try:
        await wait_until_healthy(proc, url)
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            in_flight = [asyncio.create_task(http.post("/v1/explanations", json=a, headers=headers)) for a in asks]
            # Every one of them waits on the engine.
            await until("the requests at the engine", lambda: len(fake_sglang.fake.requests) >= len(asks), timeout_s=20)
            queued = asyncio.create_task(http.post("/v1/explanations", json=asks[0], headers=headers))
            depth = f'bill_assistant_queue_depth{{level="1",tenant="{tenant.slug}"}} 1.0'

            async def fourth_queued() -> bool:
                return depth in (await http.get("/metrics")).text

            await until("the fourth request queued", fourth_queued, timeout_s=20, every_s=0.05)
            proc.send_signal(signal.SIGTERM)
            sent = time.monotonic()
            shed = await queued
            shed_s = time.monotonic() - sent
            responses = await asyncio.gather(*in_flight)
            answered_s = time.monotonic() - sent
            await asyncio.to_thread(proc.wait, DRAIN_S + 5)
            exited_s = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    output = proc.stdout.read().decode() if proc.stdout else ""

    assert proc.returncode == 0, output
    # The engine requests get the whole drain time, no longer; the process then ends promptly.
    assert DRAIN_S <= answered_s < DRAIN_S + 1, (answered_s, output)
    assert DRAIN_S <= exited_s < DRAIN_S + 2, (exited_s, output)
    assert shed_s < 1, shed_s  # at once, not at the drain deadline
    assert shed.status_code == 503
    assert shed.headers["retry-after"] == "5"
    assert shed.json()["error"] == "shutting_down"
    assert [r.status_code for r in responses] == [200, 200, 200]
    bodies = [r.json() for r in responses]
    assert [b["source"] for b in bodies] == ["fallback"] * 3
    assert [b["explanation"] for b in bodies] == expected
    ids = [uuid.UUID(b["answer_id"]) for b in bodies]
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                text("SELECT id, source, fallback_reason FROM answers WHERE id = ANY(:ids)"), {"ids": ids}
            )
        ).all()
    assert sorted(rows) == sorted((i, "fallback", "engine_timeout:shutdown") for i in ids)
    # Each cut-off engine request was aborted, not left running on the GPU.
    assert fake_sglang.fake.aborted == {i.hex for i in ids}
