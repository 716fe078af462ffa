"""The per-process overload guard through the real app on a real server: with MAX_IN_FLIGHT=2 and
two requests held by a hanging engine, the third is refused at once with 503 and Retry-After,
probes still answer, and once the held ones finish requests are admitted again."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from app.api.app import create_app
from app.settings import Settings
from bench.fakes.plans import GOOD, plan
from bench.fakes.sglang_server import RunningFake, Script
from tests.factories import document
from tests.metrics import sample
from tests.servers import ThreadedServer
from tests.waiting import until

QUESTION = {"account_ref": "A-1", "question": "Why is my bill higher than last month?", "as_of": "2026-11-10"}

SHED_BODY = {
    "status": 503,
    "error": "overloaded",
    "message": "the service is at capacity; retry after 1 s",
    "retry_after_s": 1,
}


PAYMENT = plan({"claim": "payment_status", "status": "unpaid"}, {"claim": "minimum_due"})


async def test_the_third_concurrent_request_is_shed_and_probes_still_answer(
    database_url: str, bank: Any, fake_sglang: RunningFake
) -> None:
    # Held at the engine for long enough that the checks below run while both are (the plan it then
    # writes is short: the required claims are prefilled).
    fake_sglang.fake.default = Script(text=GOOD, hang_s=3.0)
    # No batch worker: it could take another test's job items to the same fake engine.
    env = {
        "ENGINE": "sglang",
        "SGLANG_URL": fake_sglang.url,
        "API_KEY_CACHE_TTL": "0",
        "BATCH_WORKER": "0",
        "ANSWER_CACHE_FILL": "0",
    }
    settings = Settings.from_env({**env, "MAX_IN_FLIGHT": "2", "MAX_LOOP_LAG_MS": "0"})
    app = create_app(settings, database_url)
    limiter = app.state.limiter
    server = ThreadedServer(app)
    headers = {"Authorization": f"Bearer {bank.key}"}
    shed_before = sample("bill_assistant_http_shed_total", {"reason": "in_flight", "level": "any"})
    gauge_before = sample("bill_assistant_http_in_flight")
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as http:
            held = [
                asyncio.create_task(http.post("/v1/explanations", json={**QUESTION, "question": q}, headers=headers))
                for q in ("Why is my bill higher than last month?", "What is this charge?")
            ]
            await until("both requests at the engine", lambda: len(fake_sglang.fake.requests) == 2)
            assert limiter.in_flight == 2
            assert sample("bill_assistant_http_in_flight") - gauge_before == 2

            refused = await http.post("/v1/explanations", json=QUESTION, headers=headers)
            assert refused.status_code == 503
            assert refused.json() == SHED_BODY
            assert refused.headers["retry-after"] == "1"
            assert "server-timing" in refused.headers  # the request log saw it
            assert refused.elapsed.total_seconds() < 1.0  # at once, not after the held ones

            assert (await http.get("/health")).status_code == 200  # probes are exempt
            assert (await http.get("/ready")).status_code == 200
            assert (await http.get("/metrics")).status_code == 200
            assert all(not task.done() for task in held)  # still saturated throughout

            assert [(await task).status_code for task in held] == [200, 200]
            assert limiter.in_flight == 0
            fake_sglang.fake.default = Script(text=PAYMENT)
            again = await http.post(
                "/v1/explanations", json={**QUESTION, "question": "Did my payment arrive?"}, headers=headers
            )
            assert (again.status_code, again.json()["source"]) == (200, "model")
    finally:
        server.stop()
    assert sample("bill_assistant_http_shed_total", {"reason": "in_flight", "level": "any"}) - shed_before == 1
    assert sample("bill_assistant_http_in_flight") - gauge_before == 0


async def test_a_batch_flood_fills_half_the_process_and_live_requests_are_still_admitted(
    database_url: str, bank: Any, make_tenant: Any, load: Any, fake_sglang: RunningFake
) -> None:
    jobs = await make_tenant(priority_class="batch")
    await load(document(jobs.slug))
    # Held at the engine for long enough that the checks below run while the flood holds its places
    # (the plan it then writes is short: the required claims are prefilled).
    fake_sglang.fake.default = Script(text=GOOD, hang_s=3.0)
    env = {
        "ENGINE": "sglang",
        "SGLANG_URL": fake_sglang.url,
        "ENGINE_CAPACITY": "4",
        "API_KEY_CACHE_TTL": "0",
        "BATCH_WORKER": "0",
        "ANSWER_CACHE_FILL": "0",
        "MAX_IN_FLIGHT": "8",
        "MAX_LOOP_LAG_MS": "0",
    }
    app = create_app(Settings.from_env(env), database_url)
    server = ThreadedServer(app)
    batch_shed_before = sample("bill_assistant_http_shed_total", {"reason": "in_flight", "level": "0"})
    live_shed_before = sample("bill_assistant_http_shed_total", {"reason": "in_flight", "level": "1"})
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as http:

            def ask(tenant: Any, channel: str, n: int) -> asyncio.Task[httpx.Response]:
                body = {**QUESTION, "channel": channel, "question": f"Why is my bill higher? ({n})"}
                headers = {"Authorization": f"Bearer {tenant.key}"}
                return asyncio.create_task(http.post("/v1/explanations", json=body, headers=headers))

            flood = [ask(jobs, "batch", n) for n in range(6)]
            # Half the places (4 of 8) take batch work: 3 at the engine (a quarter of it stays free
            # for people), 1 queued in the scheduler; the other 2 are refused at once.
            await until("three batch requests at the engine", lambda: len(fake_sglang.fake.requests) == 3)
            await until("two batch refusals", lambda: sum(task.done() for task in flood) == 2)
            refused = [task.result() for task in flood if task.done()]
            held = [task for task in flood if not task.done()]
            assert [(r.status_code, r.json()["error"], r.headers["retry-after"]) for r in refused] == [
                (503, "overloaded", "1"),
                (503, "overloaded", "1"),
            ]
            # The bank's live api requests find the places batch may not take.
            live = [ask(bank, "api", n) for n in range(2)]
            answered = await asyncio.gather(*live)
            assert [r.status_code for r in answered] == [200, 200]
            assert [r.json()["source"] for r in answered] == ["model", "model"]
            assert [(await task).status_code for task in held] == [200] * 4
    finally:
        server.stop()
    assert sample("bill_assistant_http_shed_total", {"reason": "in_flight", "level": "0"}) - batch_shed_before == 2
    assert sample("bill_assistant_http_shed_total", {"reason": "in_flight", "level": "1"}) - live_shed_before == 0
