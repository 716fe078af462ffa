"""Admission through the HTTP API: 429 and 503 with Retry-After, and a caller who hangs up is
cancelled — out of the queue, and its engine request aborted."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.app import create_app
from app.data.tenants import set_limits
from app.domain.priority import sglang_priority
from app.settings import Settings
from bench.fakes.plans import GOOD
from bench.fakes.sglang_server import RunningFake, Script
from tests.servers import ThreadedServer
from tests.waiting import until

QUESTION = {"account_ref": "A-1", "question": "Why is my bill higher than last month?", "as_of": "2026-11-10"}


def llm_settings(fake: RunningFake, **extra: str) -> Settings:
    return Settings.from_env(
        {"ENGINE": "sglang", "SGLANG_URL": fake.url, "API_KEY_CACHE_TTL": "0", "ANSWER_CACHE_FILL": "0", **extra}
    )


async def test_over_the_rate_limit_is_429_with_retry_after(client: Any, bank: Any, engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await set_limits(conn, bank.slug, {"rate_limit_per_s": 1})
    headers = {"Authorization": f"Bearer {bank.key}"}
    statuses = [(await client.post("/v1/explanations", json=QUESTION, headers=headers)) for _ in range(3)]
    assert statuses[0].status_code == 200
    limited = statuses[-1]
    assert limited.status_code == 429
    assert int(limited.headers["retry-after"]) >= 1
    assert limited.json()["error"] == "rate_limited"
    assert limited.json()["retry_after_s"] == int(limited.headers["retry-after"])


async def test_overload_is_503_with_retry_after_and_batch_goes_last(
    database_url: str, bank: Any, fake_sglang: RunningFake
) -> None:
    fake_sglang.fake.default = Script(text=GOOD, hang_s=1.0)
    # One engine slot, and queue deadlines far shorter than one answer: the second request is refused.
    app = create_app(llm_settings(fake_sglang, ENGINE_CAPACITY="1", QUEUE_DEADLINE_SCALE="0.01"), database_url)
    server = ThreadedServer(app)
    headers = {"Authorization": f"Bearer {bank.key}"}
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as http:
            first = asyncio.create_task(http.post("/v1/explanations", json=QUESTION, headers=headers))
            await until("the first request to hold the slot", lambda: app.state.answers.scheduler.in_flight == 1)
            refused = await http.post("/v1/explanations", json=QUESTION, headers=headers)
            assert refused.status_code == 503
            assert refused.json()["error"] == "overloaded"
            assert int(refused.headers["retry-after"]) >= 1
            answered = await first
            assert (answered.status_code, answered.json()["source"]) == (200, "model")
            batch_question = {**QUESTION, "question": "Did my payment arrive?", "channel": "batch"}  # not cached
            batch = await http.post("/v1/explanations", json=batch_question, headers=headers)
            assert batch.status_code == 200
            metrics = (await http.get("/metrics")).text
    finally:
        server.stop()
    assert [r["priority"] for r in fake_sglang.fake.requests] == [
        sglang_priority(1),
        sglang_priority(0),
    ]  # api, then batch
    assert f'bill_assistant_shed_total{{level="1",reason="overloaded",tenant="{bank.slug}"}} 1.0' in metrics


async def test_a_caller_who_hangs_up_is_cancelled_and_the_engine_aborted(
    database_url: str, bank: Any, fake_sglang: RunningFake
) -> None:
    fake_sglang.fake.default = Script(text=GOOD, hang_s=30)
    app = create_app(llm_settings(fake_sglang, ENGINE_CAPACITY="1"), database_url)
    server = ThreadedServer(app)
    try:
        body = json.dumps(QUESTION).encode()
        raw = (
            f"POST /v1/explanations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {bank.key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode() + body
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(raw)
            await until("the request to reach the engine", lambda: bool(fake_sglang.fake.requests))
            rid = fake_sglang.fake.requests[-1]["rid"]
            assert app.state.answers.scheduler.in_flight == 1
        # The socket is closed: the request must be cancelled and its generation aborted.
        await until(
            "the engine request aborted and the slot free",
            lambda: rid in fake_sglang.fake.aborted and app.state.answers.scheduler.in_flight == 0,
        )
        fake_sglang.fake.default = Script(text=GOOD)
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as http:  # the slot is free again
            after = await http.post("/v1/explanations", json=QUESTION, headers={"Authorization": f"Bearer {bank.key}"})
            metrics = (await http.get("/metrics")).text
        assert (after.status_code, after.json()["source"]) == (200, "model")
        assert f'bill_assistant_cancelled_total{{level="1",tenant="{bank.slug}",where="running"}} 1.0' in metrics
    finally:
        server.stop()
