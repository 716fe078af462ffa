"""Per-stage timings: they add up, they reach the Server-Timing header and the Prometheus histograms
with the right labels, and token counts reach the counters."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from app.api.app import create_app
from app.settings import Settings
from bench.fakes.plans import GOOD
from bench.fakes.sglang_server import RunningFake, Script
from tests.factories import document
from tests.metrics import sample

SEQUENTIAL = ("auth", "admission", "db", "facts", "explain", "prompt", "engine", "validate", "audit")
# The model's end of a plan that is refused once it ends (a field a plan does not have): every stage
# runs, the deterministic answer's ("explain") included.
REFUSED = '], "note": "free text"}'


@pytest.fixture
async def llm_client(database_url: str, fake_sglang: RunningFake) -> AsyncIterator[AsyncTestClient[Any]]:
    settings = Settings.from_env({"ENGINE": "sglang", "SGLANG_URL": fake_sglang.url, "ANSWER_CACHE_FILL": "0"})
    async with AsyncTestClient(app=create_app(settings, database_url)) as client:
        yield client


async def test_stage_timings_add_up_and_reach_header_and_metrics(
    llm_client: Any, make_tenant: Any, load: Any, fake_sglang: RunningFake
) -> None:
    fake_sglang.fake.default = Script(text=REFUSED)
    fake_sglang.fake.speculative = True
    tenant = await make_tenant()
    await load(document(tenant.slug))
    spec_before = sample("bill_assistant_spec_accept_rate_count"), sample("bill_assistant_spec_accept_rate_sum")
    r = await llm_client.post(
        "/v1/explanations",
        json={"account_ref": "A-1", "question": "Why is my bill higher?", "as_of": "2026-11-10"},
        headers={"Authorization": f"Bearer {tenant.key}"},
    )
    assert r.status_code == 200
    assert r.json()["source"] == "fallback"
    timings = r.json()["timings_ms"]
    assert set(SEQUENTIAL) <= timings.keys()
    assert {"ttft", "decode", "queue"} <= timings.keys()
    assert sum(timings[s] for s in SEQUENTIAL) <= timings["total"]
    assert timings["ttft"] + timings["decode"] <= timings["engine"]
    assert all(0 <= v <= timings["total"] for v in timings.values())

    header = dict(part.split(";dur=") for part in r.headers["server-timing"].split(", "))
    assert set(SEQUENTIAL) | {"ttft", "decode", "queue", "total"} <= header.keys()
    assert float(header["total"]) >= float(header["db"]) > 0

    metrics = (await llm_client.get("/metrics")).text
    for stage in ("auth", "db", "ttft", "validate", "total"):
        labels = f'channel="api",stage="{stage}",tenant="{tenant.slug}"'
        assert f"bill_assistant_stage_seconds_count{{{labels}}} 1.0" in metrics, stage
    usage = r.json()["usage"]
    assert f'bill_assistant_prompt_tokens_total{{tenant="{tenant.slug}"}} {float(usage["prompt_tokens"])}' in metrics
    cached = float(usage["cached_tokens"])
    assert f'bill_assistant_cached_prompt_tokens_total{{tenant="{tenant.slug}"}} {cached}' in metrics
    # One request, and the fake reports an acceptance rate of 0.75 for it.
    count, total = sample("bill_assistant_spec_accept_rate_count"), sample("bill_assistant_spec_accept_rate_sum")
    assert count == spec_before[0] + 1
    assert total == pytest.approx(spec_before[1] + 0.75)


async def test_a_refused_request_still_has_server_timing(client: Any) -> None:
    r = await client.post("/v1/explanations", json={"account_ref": "A-1", "question": "?"})
    assert r.status_code == 401
    assert "total;dur=" in r.headers["server-timing"]


async def test_answer_latency_by_tenant_and_channel_reaches_the_histograms(
    llm_client: Any, make_tenant: Any, load: Any, fake_sglang: RunningFake
) -> None:
    fake_sglang.fake.default = Script(text=GOOD)
    tenant = await make_tenant()
    await load(document(tenant.slug))
    first = {"tenant": tenant.slug, "channel": "api"}
    whole = {**first, "source": "model"}
    before = (
        sample("bill_assistant_answer_first_text_seconds_count", first),
        sample("bill_assistant_answer_seconds_count", whole),
        sample("bill_assistant_answer_seconds_sum", whole),
    )
    r = await llm_client.post(
        "/v1/explanations",
        json={"account_ref": "A-1", "question": "Why is my bill higher?", "as_of": "2026-11-10"},
        headers={"Authorization": f"Bearer {tenant.key}"},
    )
    assert r.status_code == 200
    assert r.json()["source"] == "model"
    assert sample("bill_assistant_answer_first_text_seconds_count", first) == before[0] + 1
    assert sample("bill_assistant_answer_seconds_count", whole) == before[1] + 1
    # The whole answer is timed from the request's arrival, once audited: at least the answer's total.
    took = sample("bill_assistant_answer_seconds_sum", whole) - before[2]
    assert took >= r.json()["timings_ms"]["total"] / 1000 > r.json()["timings_ms"]["engine"] / 1000
    # Another source is another series: a fallback is not counted as a model answer.
    assert sample("bill_assistant_answer_seconds_count", {**first, "source": "fallback"}) == 0
