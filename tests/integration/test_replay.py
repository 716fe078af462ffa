"""Replay is open loop: arrivals keep their schedule even when the server is slow."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from app.replay.run import replay
from app.replay.traffic import Arrival
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
        arrivals = [Arrival(i * 0.02, "bank", "api", "A-1", "why?", "en") for i in range(20)]
        started = time.perf_counter()
        samples = await replay(arrivals, server.url, {"bank": "k"})
    finally:
        server.stop()
    assert len(samples) == 20
    # All 20 were sent within ~0.4 s although each answer took 0.5 s: nothing waited for a response.
    assert max(app.arrived) - started < 0.45
    assert all(s.status == 200 and s.e2e_ms >= 500 for s in samples)
    assert {s.ttft_ms for s in samples} == {12.5}
    assert {s.source for s in samples} == {"model"}
