"""Open-loop load on POST /v1/explanations over seeded demo data.

    ./scripts/dev bench explain [--rates 50,100,200,300] [--duration 20]

Creates a scratch database (on DATABASE_URL's server, or the embedded Postgres), seeds the demo
bank, starts `bill-assistant serve` as a separate process, and drives it at each rate in turn,
printing one table: achieved requests/s and P50/P90/P99/max latency per offered rate. The engine is
off (ENGINE=off): this measures everything around it; bench/prefix_cache.py measures the engine.
"""

from __future__ import annotations

import argparse
import os
import random
from collections.abc import Callable
from typing import Any

import msgspec
import uvloop

from app.replay.http import post
from bench.common import demo_database, service
from bench.loadgen import open_loop

QUESTIONS = [
    ("Why is my bill higher than last month?", None),
    ("What is this charge?", None),
    ("为什么这个月的账单比上个月多？", "zh-CN"),
    ("Did my payment arrive?", "en"),
]


def explanation_requests(port: int, key: str, refs: list[str]) -> Callable[[int], bytes]:
    """The i-th request: POST /v1/explanations on a random seeded account with the question mix
    (the same sequence in every run)."""
    rng = random.Random(7)
    headers = {"Authorization": f"Bearer {key}"}

    def make_request(i: int) -> bytes:
        question, locale = QUESTIONS[i % len(QUESTIONS)]
        body: dict[str, Any] = {"account_ref": rng.choice(refs), "question": question}
        if locale:
            body["locale"] = locale
        return post("127.0.0.1", port, "/v1/explanations", msgspec.json.encode(body), headers)

    return make_request


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", default="50,100,200,300", help="offered requests/s, comma-separated")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds per rate")
    parser.add_argument("--target-rate", type=float, default=200.0)
    parser.add_argument("--target-p99-ms", type=float, default=25.0)
    args = parser.parse_args(argv)
    rates = [float(r) for r in args.rates.split(",")]

    # The deterministic path: this measures the service around the engine (the engine has its own bench).
    with demo_database() as (url, key, refs), service(url, {"ENGINE": "off"}) as port:
        make_request = explanation_requests(port, key, refs)
        uvloop.run(open_loop("127.0.0.1", port, 100, 3, make_request))  # warm-up: pools, caches, JIT-free paths
        print(f"POST /v1/explanations, open loop (Poisson), {len(refs)} accounts, {args.duration:.0f} s per rate, "
              f"{os.cpu_count()} cores, server and load generator on the same machine")  # fmt: skip
        columns = ("offered/s", "achieved/s", "P50 ms", "P90 ms", "P99 ms", "max ms", "errors")
        print(" ".join(f"{c:>11}" for c in columns))
        verdict = None
        for rate in rates:
            r = uvloop.run(open_loop("127.0.0.1", port, rate, args.duration, make_request))
            errors = sum(r.errors.values())
            row = (r.percentile(50), r.percentile(90), r.percentile(99), max(r.latencies_ms, default=float("nan")))
            print(f"{rate:>11.0f} {r.throughput:>11.1f} " + " ".join(f"{v:>11.2f}" for v in row)
                  + f" {errors:>11}" + (f"  {r.errors}" if errors else ""))  # fmt: skip
            if rate == args.target_rate:
                verdict = r.percentile(99) < args.target_p99_ms and errors == 0
        if verdict is not None:
            outcome = "met" if verdict else "MISSED"
            print(f"target P99 < {args.target_p99_ms:.0f} ms at {args.target_rate:.0f}/s: {outcome}")
