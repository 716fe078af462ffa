"""Priorities under overload: interactive latency holds while batch absorbs the delay.

    ./scripts/dev bench priorities [--duration 15] [--capacity 8] [--service-ms 100]

Drives the real admission scheduler (app/inference/scheduler.py) in front of a fake engine with
realistic service times: log-normal (median service-ms, long right tail), and slower when more
requests share it (continuous batching: +30% at full capacity). Open-loop Poisson arrivals for a
fixed time in two phases, side by side in one run:
- unloaded: widget and console traffic of an interactive bank at 30% of the engine's capacity;
- overloaded: the same, plus batch traffic of a batch-class bank, together twice the capacity.
Prints P50/P99 of the wait for admission and of the end-to-end latency per class, what was shed,
and batch throughput. Target: interactive P99 latency overloaded <= 1.5x unloaded.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import time
from collections import defaultdict
from dataclasses import dataclass, field

from app.domain.priority import QUEUE_DEADLINE_S, TenantLimits, effective_level
from app.domain.vocabulary import Channel, PriorityClass
from app.errors import Shed
from app.inference.scheduler import Scheduler

BANK = TenantLimits(weight=1, max_concurrency=1000, rate_per_s=1e6)
TRAFFIC: dict[Channel, tuple[str, PriorityClass]] = {  # channel -> (tenant, tenant class)
    "widget": ("northbridge", "interactive"),
    "console": ("northbridge", "interactive"),
    "batch": ("downstream-jobs", "batch"),
}


@dataclass(kw_only=True)
class Stats:
    waits: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    done_in_window: int = 0  # completed while arrivals were still coming: the throughput
    shed: int = 0


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))] * 1000


async def phase(
    rates: dict[Channel, float], duration_s: float, capacity: int, service_s: float, seed: int
) -> dict[str, Stats]:
    rng = random.Random(seed)
    scheduler = Scheduler(capacity=capacity, service_time_s=service_s)
    stats: dict[str, Stats] = defaultdict(Stats)
    window_end = time.perf_counter() + duration_s

    async def request(channel: Channel) -> None:
        tenant, klass = TRAFFIC[channel]
        arrived = time.perf_counter()
        try:
            async with scheduler.admit(
                tenant, BANK, effective_level(klass, channel), QUEUE_DEADLINE_S[channel]
            ) as ticket:
                # Continuous batching: each request is slower when more share the engine.
                slowdown = 1 + 0.3 * (scheduler.in_flight - 1) / max(1, capacity - 1)
                await asyncio.sleep(service_s * rng.lognormvariate(0, 0.5) * slowdown)
            stats[channel].waits.append(ticket.wait_s)
            stats[channel].latencies.append(time.perf_counter() - arrived)
            stats[channel].done_in_window += time.perf_counter() <= window_end
        except Shed:
            stats[channel].shed += 1

    async def arrivals(channel: Channel, rate: float) -> list[asyncio.Task[None]]:
        tasks, at, start = [], 0.0, time.perf_counter()
        while (at := at + rng.expovariate(rate)) < duration_s:
            await asyncio.sleep(max(0.0, start + at - time.perf_counter()))
            tasks.append(asyncio.create_task(request(channel)))
        return tasks

    batches = await asyncio.gather(*(arrivals(c, r) for c, r in rates.items() if r > 0))
    await asyncio.gather(*(t for batch in batches for t in batch))
    return stats


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=15.0, help="seconds per phase")
    parser.add_argument("--capacity", type=int, default=8, help="the engine's concurrent requests")
    parser.add_argument("--service-ms", type=float, default=100.0, help="median service time")
    args = parser.parse_args(argv)
    service_s = args.service_ms / 1000
    # Mean service is median * e^(sigma^2/2) for a log-normal; capacity in requests/s:
    throughput = args.capacity / (service_s * math.exp(0.5**2 / 2))
    interactive: dict[Channel, float] = {"widget": 0.2 * throughput, "console": 0.1 * throughput}
    overload: dict[Channel, float] = {**interactive, "batch": 2 * throughput - 0.3 * throughput}
    unloaded = asyncio.run(phase(interactive, args.duration, args.capacity, service_s, seed=1))
    overloaded = asyncio.run(phase(overload, args.duration, args.capacity, service_s, seed=1))

    print(f"admission scheduler + fake engine: capacity {args.capacity}, median service {args.service_ms:.0f} ms "
          f"(log-normal, +30% at full batch), ~{throughput:.0f} requests/s; "
          f"{args.duration:.0f} s per phase, open loop")  # fmt: skip
    header = ("phase", "channel", "offered/s", "done/s", "P50 wait", "P99 wait", "P50 e2e", "P99 e2e", "shed")
    print(f"{header[0]:<11} {header[1]:<8} " + " ".join(f"{h:>9}" for h in header[2:]))
    for name, rates, result in (("unloaded", interactive, unloaded), ("overloaded", overload, overloaded)):
        for channel, rate in rates.items():
            s = result[channel]
            row = (rate, s.done_in_window / args.duration, pct(s.waits, 50), pct(s.waits, 99),
                   pct(s.latencies, 50), pct(s.latencies, 99))  # fmt: skip
            print(f"{name:<11} {channel:<8} " + " ".join(f"{v:>9.1f}" for v in row) + f" {s.shed:>9}")
    for channel in ("widget", "console"):
        ratio = pct(overloaded[channel].latencies, 99) / pct(unloaded[channel].latencies, 99)
        print(f"{channel} P99 latency overloaded / unloaded: {ratio:.2f}x (target <= 1.5x: "
              f"{'met' if ratio <= 1.5 else 'MISSED'})")  # fmt: skip
    print(f"batch throughput under overload: {overloaded['batch'].done_in_window / args.duration:.1f} requests/s "
          f"of {throughput:.0f} capacity, {overloaded['batch'].shed} shed")  # fmt: skip
