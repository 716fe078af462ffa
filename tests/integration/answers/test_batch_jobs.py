"""Batch jobs: every item ends with an answer or a reason, idempotency keys, tenant isolation, and
jobs that survive a restart."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.app import create_app
from app.data.jobs import claim_items
from app.settings import Settings
from tests.factories import document

FAST = {"ENGINE": "off", "BATCH_POLL_S": "0.02"}


def app_client(database_url: str, **env: str) -> AsyncTestClient[Any]:
    return AsyncTestClient(app=create_app(Settings.from_env({**FAST, **env}), database_url))


@pytest.fixture(autouse=True)
async def no_items_left_behind(engine: AsyncEngine) -> AsyncIterator[None]:
    """Items a test leaves pending would be taken by the batch worker of a later test's app, and sent
    to the engine that test scripts: end them here."""
    yield
    async with engine.begin() as conn:
        await conn.execute(text("UPDATE job_items SET status = 'error', error = 'test ended' WHERE status = 'pending'"))


@pytest.fixture
async def jobs_client(database_url: str) -> AsyncIterator[AsyncTestClient[Any]]:
    async with app_client(database_url) as client:
        yield client


def auth(tenant: Any) -> dict[str, str]:
    return {"Authorization": f"Bearer {tenant.key}"}


async def wait_done(client: Any, tenant: Any, job_id: str, timeout_s: float = 10) -> Any:
    for _ in range(int(timeout_s / 0.05)):
        view = (await client.get(f"/v1/jobs/{job_id}", headers=auth(tenant))).json()
        if view["status"] == "done":
            return view
        await asyncio.sleep(0.05)
    raise AssertionError(f"job not done: {view}")


ITEMS = [
    {"account_ref": "A-1", "as_of": "2026-11-10"},
    {"account_ref": "A-1", "question": "为什么这个月账单多了？", "locale": "zh-CN", "as_of": "2026-11-10"},
    {"account_ref": "A-404"},
]


async def test_every_item_ends_with_an_answer_or_a_reason(jobs_client: Any, bank: Any, engine: AsyncEngine) -> None:
    r = await jobs_client.post("/v1/explanations:batch", json={"items": ITEMS}, headers=auth(bank))
    assert r.status_code == 202
    assert r.json()["total"] == 3
    view = await wait_done(jobs_client, bank, r.json()["job_id"])
    assert (view["total"], view["done"], view["failed"]) == (3, 2, 1)
    first, second, missing = view["items"]
    assert first["answer"]["totals"] == {"current": "124.99", "previous": "112.99", "difference": "12.00"}
    assert first["answer"]["intent"] == "bill_change"  # the default question
    assert second["answer"]["locale"] == "zh-CN"
    assert missing["status"] == "error"
    assert missing["error"].startswith("not_found")
    async with engine.connect() as conn:  # audited as a job's items, not as requests of their own
        origins = await conn.execute(text("SELECT origin FROM answers WHERE tenant_id = :t"), {"t": bank.id})
        assert list(origins.scalars()) == ["job", "job"]


async def test_a_repeated_idempotency_key_returns_the_same_job(jobs_client: Any, bank: Any, make_tenant: Any,
                                                               load: Any) -> None:  # fmt: skip
    headers = {**auth(bank), "Idempotency-Key": "nightly-2026-11-30"}
    first = await jobs_client.post("/v1/explanations:batch", json={"items": ITEMS[:2]}, headers=headers)
    # The same items, their fields in another order: the same request, so the same job.
    reordered = [dict(reversed(item.items())) for item in ITEMS[:2]]
    again = await jobs_client.post("/v1/explanations:batch", json={"items": reordered}, headers=headers)
    assert (first.status_code, again.status_code) == (202, 202)
    assert first.json()["job_id"] == again.json()["job_id"]
    assert again.json()["total"] == 2  # the first submission's job, not a new one
    other = await make_tenant()
    await load(document(other.slug))
    theirs = await jobs_client.post(
        "/v1/explanations:batch",
        json={"items": ITEMS[:1]},
        headers={**auth(other), "Idempotency-Key": "nightly-2026-11-30"},
    )
    assert theirs.json()["job_id"] != first.json()["job_id"]  # keys are per tenant


@pytest.mark.parametrize(
    "items",
    [ITEMS, ITEMS[:1], [ITEMS[1], ITEMS[0]], [ITEMS[0], {**ITEMS[1], "as_of": "2026-11-11"}]],
    ids=["more", "fewer", "reordered", "changed"],
)
async def test_an_idempotency_key_reused_with_another_body_is_refused(
    jobs_client: Any, bank: Any, engine: AsyncEngine, items: list[dict[str, Any]]
) -> None:
    headers = {**auth(bank), "Idempotency-Key": f"reused-{uuid.uuid4()}"}
    first = await jobs_client.post("/v1/explanations:batch", json={"items": ITEMS[:2]}, headers=headers)
    assert first.status_code == 202
    async with engine.connect() as conn:
        jobs_before = (await conn.execute(text("SELECT count(*) FROM jobs"))).scalar_one()
    r = await jobs_client.post("/v1/explanations:batch", json={"items": items}, headers=headers)
    assert r.status_code == 422
    assert r.json() == {
        "status": 422,
        "error": "unprocessable",
        "message": f"Idempotency-Key {headers['Idempotency-Key']!r} was used with a different request body"
        f" (job {first.json()['job_id']})",
    }
    async with engine.connect() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM jobs"))).scalar_one() == jobs_before


async def test_jobs_are_tenant_scoped(jobs_client: Any, bank: Any, make_tenant: Any) -> None:
    job_id = (await jobs_client.post("/v1/explanations:batch", json={"items": ITEMS[:1]}, headers=auth(bank))).json()[
        "job_id"
    ]
    other = await make_tenant()
    theirs = await jobs_client.get(f"/v1/jobs/{job_id}", headers=auth(other))
    missing = await jobs_client.get(f"/v1/jobs/{uuid.uuid4()}", headers=auth(other))
    assert theirs.status_code == missing.status_code == 404


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"items": []}, "length >= 1"),
        ({"items": [{"account_ref": "A-1"}] * 1001}, "length <= 1000"),
        ({"items": [{"account_ref": "A-1", "question": "bad\x00"}]}, "items[0]"),
        ({"items": [{"account_ref": "A-1", "tenant": "x"}]}, "unknown field"),
    ],
)
async def test_bad_batches_are_refused_whole(jobs_client: Any, bank: Any, body: Any, needle: str) -> None:
    r = await jobs_client.post("/v1/explanations:batch", json=body, headers=auth(bank))
    assert r.status_code == 400
    assert needle in r.json()["message"]


async def test_a_job_interrupted_by_a_restart_completes_after_it(database_url: str, bank: Any,
                                                                 engine: AsyncEngine) -> None:  # fmt: skip
    async with app_client(database_url, BATCH_WORKER="off") as before:  # the service, before the restart
        r = await before.post("/v1/explanations:batch", json={"items": ITEMS}, headers=auth(bank))
        job_id = r.json()["job_id"]
    async with engine.begin() as conn:  # a worker took two items and died without finishing them
        taken = await claim_items(conn, 2, lease_s=0.3)
    assert {item.job_id for item in taken} == {uuid.UUID(job_id)}
    async with app_client(database_url, BATCH_LEASE_S="5") as after:  # restarted
        view = await wait_done(after, bank, job_id)
    assert (view["done"], view["failed"]) == (2, 1)
