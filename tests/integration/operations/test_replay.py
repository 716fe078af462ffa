"""Replay is open loop: arrivals keep their schedule even when the server is slow."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from app.api.app import create_app
from app.domain.priority import sglang_priority
from app.domain.vocabulary import Channel
from app.replay.run import replay
from app.replay.traffic import Arrival
from app.settings import Settings
from bench.fakes.plans import CHANGE_UP, DRIVER_1_UP, plan
from bench.fakes.sglang_server import RunningFake, Script
from tests.factories import document
from tests.servers import ThreadedServer


class SlowApp:
    """Answers every request after 0.5 s and records when each arrived."""

    def __init__(self) -> None:
        self.arrived: list[float] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        self.arrived.append(time.perf_counter())
        await asyncio.sleep(0.5)
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"application/json"), (b"content-length", b"19"),
            (b"server-timing", b"ttft;dur=12.5, total;dur=500")]})  # fmt: skip
        await send({"type": "http.response.body", "body": b'{"source": "model"}'})


async def test_arrivals_do_not_wait_for_responses() -> None:
    app = SlowApp()
    server = ThreadedServer(app, lifespan="off")
    try:
        arrivals = [
            Arrival(at=i * 0.02, tenant="bank", channel="api", account_ref="A-1", question="why?", locale="en")
            for i in range(20)
        ]
        started = time.perf_counter()
        samples = await replay(arrivals, server.url, {"bank": "k"})
    finally:
        server.stop()
    assert len(samples) == 20
    # All 20 were sent within ~0.4 s although each answer took 0.5 s: nothing waited for a response.
    assert max(app.arrived) - started < 0.45
    # Each waited for its answer's 0.5 s (the server's uvloop timer keeps a millisecond clock read at
    # its loop's turn, so its 0.5 s may end a fraction of a millisecond early).
    assert all(s.status == 200 and s.e2e_ms >= 499 for s in samples)
    assert {s.ttft_ms for s in samples} == {12.5}
    assert {s.source for s in samples} == {"model"}


async def test_widget_arrivals_stream_through_a_session_token(
    database_url: str, make_tenant: Any, load: Any, fake_sglang: RunningFake
) -> None:
    tenant = await make_tenant("interactive")
    await load(document(tenant.slug))
    # Said claim by claim: the change and its cause first, the minimum payment after them.
    fake_sglang.fake.default = Script(text=plan(CHANGE_UP, DRIVER_1_UP, {"claim": "minimum_due"}), token_delay_s=0.02)
    env = {"ENGINE": "sglang", "SGLANG_URL": fake_sglang.url, "API_KEY_CACHE_TTL": "0", "BATCH_WORKER": "0"}
    server = ThreadedServer(create_app(Settings.from_env(env), database_url))
    channels: list[Channel] = ["widget", "api", "widget", "batch"]
    try:
        arrivals = [
            Arrival(
                at=i * 0.05,
                tenant=tenant.slug,
                channel=channel,
                account_ref="A-1",
                question="Why is my bill higher?",
                locale="en",
                customer_ref="C-1001",
            )
            for i, channel in enumerate(channels)
        ]
        samples = await replay(arrivals, server.url, {tenant.slug: tenant.key})
    finally:
        server.stop()
    by_channel = {s.channel: s for s in samples}
    assert {s.status for s in samples} == {200}
    assert {s.source for s in samples} <= {"model", "cache"}
    widget = by_channel["widget"]
    assert widget.ttft_ms is not None
    assert 0 < widget.ttft_ms < widget.e2e_ms  # the first words came before the end of the stream
    assert fake_sglang.fake.requests[0]["priority"] == sglang_priority(3)  # the first arrival: the widget, at its level
