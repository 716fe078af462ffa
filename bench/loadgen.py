"""Open-loop Poisson load at a fixed rate (bench/explain_load.py).

Requests are sent at their scheduled times whether or not earlier ones have answered, and latency
is measured from the scheduled time, so a slow server cannot hide its queue (no coordinated omission).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from app.replay.http import Pool
from app.reports.stats import percentile


@dataclass
class Result:
    latencies_ms: list[float] = field(default_factory=list)  # of the 200s
    shed_ms: list[float] = field(default_factory=list)  # of the 503s (also counted in errors)
    errors: dict[str, int] = field(default_factory=dict)
    no_retry_after: int = 0  # 429s and 503s without a Retry-After header
    elapsed_s: float = 0.0

    def percentile(self, q: float) -> float:
        return percentile(self.latencies_ms, q)

    @property
    def throughput(self) -> float:
        return len(self.latencies_ms) / self.elapsed_s if self.elapsed_s else 0.0


async def open_loop(
    host: str, port: int, rate: float, duration_s: float, make_request: Callable[[int], bytes], seed: int = 1
) -> Result:
    """Send Poisson arrivals at `rate` per second for `duration_s`; wait for all answers."""
    rng = random.Random(seed)
    pool = Pool(host, port)
    result = Result()
    tasks: list[asyncio.Task[None]] = []

    async def one(i: int, scheduled: float) -> None:
        try:
            reply = await pool.request(make_request(i))
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            key = type(exc).__name__
        else:
            if reply.status == 200:
                result.latencies_ms.append((time.perf_counter() - scheduled) * 1000)
                return
            key = str(reply.status)
            if reply.status in (429, 503) and "retry-after" not in reply.headers:
                result.no_retry_after += 1
            if reply.status == 503:
                result.shed_ms.append((time.perf_counter() - scheduled) * 1000)
        result.errors[key] = result.errors.get(key, 0) + 1

    start = time.perf_counter()
    at = 0.0
    i = 0
    while at < duration_s:
        delay = start + at - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(i, start + at)))
        i += 1
        at += rng.expovariate(rate)
    await asyncio.gather(*tasks)
    result.elapsed_s = time.perf_counter() - start
    pool.close()
    return result
