"""Throughput from one to several worker processes (`serve --workers N`), on the model path.

    ./scripts/dev bench workers [--rates 100,200,300,400] [--duration 8] [--workers 2]

The model path of bench/overhead.py (the fake SGLang server as a zero-latency engine, in its own
process; every request goes to the engine) on one scratch demo bank, driven open loop at each rate:
- 1 worker, admission local: one process counting alone (the default for one process);
- 1 worker, admission shared: the same, but every admission counted in Postgres (the ledger's cost);
- N workers (admission shared, as `--workers` makes it).
Per run and rate: achieved answers/s, P50/P99, and the CPU time of the whole service (the
supervisor and every worker) per answer. A rate is "sustained" when at least 97% of it is
answered with 200 and P99 stays under 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path

import uvloop

from bench.common import demo_database, service_process
from bench.loadgen import Result, open_loop
from bench.overhead import _cpu_s, _per_request, _request, _sources, fake_engine

SUSTAINED_P99_MS = 100.0


def _service_cpu_s(pid: int) -> float:
    """CPU seconds of the process and its children (uvicorn's workers)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return _cpu_s(pid) + sum(_cpu_s(int(child)) for child in children)


def _sustained(rate: float, r: Result) -> bool:
    return r.throughput >= 0.97 * rate and r.percentile(99) < SUSTAINED_P99_MS


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", default="100,200,300,400", help="offered answers/s, comma-separated")
    parser.add_argument("--duration", type=float, default=8.0, help="seconds per rate")
    parser.add_argument("--workers", type=int, default=2, help="the worker count to compare with one")
    args = parser.parse_args(argv)
    rates = [float(r) for r in args.rates.split(",")]

    runs = [("1 worker, local", 1, "local"), ("1 worker, shared", 1, "shared"),
            (f"{args.workers} workers, shared", args.workers, "shared")]  # fmt: skip
    table: list[tuple[str, float, Result, float]] = []
    with fake_engine() as engine, demo_database() as (url, key, refs):
        for name, workers, admission in runs:
            with service_process(url, {**engine.env, "ADMISSION": admission, "SESSION_SECRET": "bench"}, workers) as (
                port,
                pid,
            ):
                sources = asyncio.run(_sources(port, key, refs))
                asked = sorted(ref for ref in refs if sources[ref] == "model")

                def make_request(i: int, port: int = port, asked: list[str] = asked) -> bytes:
                    return _request(port, key, asked[(i * 7919) % len(asked)])

                uvloop.run(open_loop("127.0.0.1", port, 50, 3, make_request))  # warm-up
                for rate in rates:
                    before = _service_cpu_s(pid)
                    r = uvloop.run(open_loop("127.0.0.1", port, rate, args.duration, make_request))
                    cpu_ms = _per_request(_service_cpu_s(pid) - before, r)
                    table.append((name, rate, r, cpu_ms))
                    print(f"{name} at {rate:.0f}/s: {r.throughput:.1f}/s, P99 {r.percentile(99):.1f} ms", flush=True)

    print(f"\nPOST /v1/explanations, model path, open loop, {args.duration:.0f} s per rate, {os.cpu_count()} cores; "
          "service, load generator, fake engine and Postgres on the same machine")  # fmt: skip
    columns = ("offered/s", "achieved/s", "P50 ms", "P99 ms", "CPU ms/ans", "errors")
    print(f"{'run':<20} " + " ".join(f"{c:>10}" for c in columns))
    for name, rate, r, cpu_ms in table:
        print(f"{name:<20} {rate:>10.0f} {r.throughput:>10.1f} {r.percentile(50):>10.2f} {r.percentile(99):>10.2f} "
              f"{cpu_ms:>10.2f} {sum(r.errors.values()):>10}" + (f"  {r.errors}" if r.errors else ""))  # fmt: skip
    best = {name: max([rate for n, rate, r, _ in table if n == name and _sustained(rate, r)], default=0.0)
            for name, _, _ in runs}  # fmt: skip
    one, many = best[runs[0][0]], best[runs[2][0]]
    print(f"highest rate sustained (>= 97% answered, P99 < {SUSTAINED_P99_MS:.0f} ms): "
          + ", ".join(f"{name} {rate:.0f}/s" for name, rate in best.items())
          + (f"; {args.workers} workers / 1: {many / one:.2f}x" if one else ""))  # fmt: skip
