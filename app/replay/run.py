"""Open-loop replay of a traffic file against a running service.

Each request is sent at its recorded time (or scaled by `speed`) whether or not earlier ones have
answered, and latency is measured from that scheduled time: a slow server cannot slow the arrivals
down and hide its queue (no coordinated omission). Time to first token is the server's own `ttft`
from the Server-Timing header (the JSON API answers in one piece).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

import msgspec

from app.replay.http import Pool, post
from app.replay.traffic import Arrival


class Sample(msgspec.Struct, frozen=True):
    tenant: str
    channel: str
    status: int  # 0: no HTTP answer (connection error)
    e2e_ms: float
    ttft_ms: float | None
    source: str | None


def _ttft(server_timing: str) -> float | None:
    for part in server_timing.split(","):
        name, _, duration = part.strip().partition(";dur=")
        if name == "ttft":
            return float(duration)
    return None


async def replay(
    arrivals: Sequence[Arrival],
    target: str,
    keys: dict[str, str],
    *,
    speed: float = 1.0,
    on_done: Callable[[Sample], None] = lambda sample: None,
) -> list[Sample]:
    url = urlsplit(target)
    host, port = url.hostname or "127.0.0.1", url.port or 80
    pool = Pool(host, port)
    samples: list[Sample] = []

    async def one(arrival: Arrival, scheduled: float) -> None:
        body = msgspec.json.encode(
            {
                "account_ref": arrival.account_ref,
                "question": arrival.question,
                "locale": arrival.locale,
                "channel": arrival.channel,
            }
        )
        raw = post(host, port, "/v1/explanations", body, {"Authorization": f"Bearer {keys[arrival.tenant]}"})
        status, ttft, source = 0, None, None
        try:
            reply = await pool.request(raw)
            status, ttft = reply.status, _ttft(reply.headers.get("server-timing", ""))
            if status == 200:
                source = msgspec.json.decode(reply.body).get("source")
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass
        sample = Sample(arrival.tenant, arrival.channel, status, (time.perf_counter() - scheduled) * 1000, ttft, source)
        samples.append(sample)
        on_done(sample)

    start = time.perf_counter()
    tasks = []
    for arrival in arrivals:
        scheduled = start + arrival.at / speed
        if (delay := scheduled - time.perf_counter()) > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(arrival, scheduled)))  # never waits for earlier answers
    await asyncio.gather(*tasks)
    pool.close()
    return samples
