"""`bill-assistant serve --workers N`: N processes on one port, admitting through the shared Postgres
ledger, with one Prometheus view (a scrape counts every worker's answers). Which worker accepts a
connection is the kernel's choice (often the same one, for a burst), so the test does not rely on
the answers being spread."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.fakes.sglang_server import RunningFake
from tests.factories import document
from tests.servers import free_port, start_service, stop_service, wait_until_healthy

QUESTION = {"account_ref": "A-1", "question": "Why is my bill higher than last month?", "as_of": "2026-11-10"}


def worker_processes(pid: int) -> list[str]:
    """The supervisor's worker processes (not multiprocessing's resource tracker)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [child for child in children if "spawn_main" in Path(f"/proc/{child}/cmdline").read_text()]


def answers_served(scrape: str) -> float:
    return sum(
        sample.value
        for family in text_string_to_metric_families(scrape)
        if family.name == "bill_assistant_answers"
        for sample in family.samples
        if sample.name == "bill_assistant_answers_total"
    )


async def test_workers_share_admission_and_one_metrics_view(
    database_url: str, make_tenant: Any, load: Any, engine: AsyncEngine, fake_sglang: RunningFake
) -> None:
    bank = await make_tenant(priority_class="interactive")
    await load(document(bank.slug))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {"DATABASE_URL": database_url, "ENGINE": "sglang", "SGLANG_URL": fake_sglang.url, "BATCH_WORKER": "0"}
    # ADMISSION unset (as in the test run's environment): more than one worker makes it shared.
    proc = start_service(port, "--workers", "2", **env, ANSWER_CACHE_FILL="0", METRICS_TOKEN="")
    headers = {"Authorization": f"Bearer {bank.key}"}

    async def fresh(method: str, path: str, **kwargs: Any) -> httpx.Response:
        """On a new connection: the kernel spreads new connections over both workers."""
        async with httpx.AsyncClient(base_url=url, timeout=30, headers=headers) as http:
            return await http.request(method, path, **kwargs)

    try:
        await wait_until_healthy(proc, url)
        assert len(worker_processes(proc.pid)) == 2
        before = answers_served((await fresh("GET", "/metrics")).text)
        responses = await asyncio.gather(*(fresh("POST", "/v1/explanations", json=QUESTION) for _ in range(20)))
        assert [r.status_code for r in responses] == [200] * 20
        async with engine.connect() as conn:  # admitted through the shared ledger: the tenant's bucket is there
            bucket = text("SELECT count(*) FROM admission_bucket WHERE tenant = :slug")
            assert (await conn.execute(bucket, {"slug": bank.slug})).scalar_one() == 1
        scrapes = [answers_served((await fresh("GET", "/metrics")).text) for _ in range(6)]
        assert scrapes == [before + 20] * 6  # whichever worker answers the scrape sees all 20
        # SESSION_SECRET unset: a customer token issued by either worker is accepted by both (before,
        # each worker signed with a random secret of its own and about half the chats were 401).
        issued = await asyncio.gather(
            *(fresh("POST", "/v1/sessions", json={"customer_ref": "C-1001"}) for _ in range(20))
        )
        assert [r.status_code for r in issued] == [201] * 20
        chats = await asyncio.gather(
            *(
                fresh("GET", "/v1/chat/accounts", headers={"Authorization": f"Bearer {r.json()['token']}"})
                for r in issued
            )
        )
        assert [r.status_code for r in chats] == [200] * 20
        proc.send_signal(signal.SIGTERM)
        await asyncio.to_thread(proc.wait, 30)
    finally:
        stop_service(proc)
    assert proc.returncode == 0


def test_workers_need_shared_admission() -> None:
    proc = start_service(free_port(), "--workers", "2", ADMISSION="local", ENGINE="off")
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "--workers above 1 needs ADMISSION=shared" in output.decode()
