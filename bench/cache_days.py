"""The answer cache over a week: how many of the same customers' questions it serves day after day.

    ./scripts/dev bench cache-days [--accounts 40] [--days 7] [--first 2026-11-10] [--service-ms 300] [--step 1]

`bill-assistant serve` in front of the fake SGLang server (a truthful plan after --service-ms) on a
scratch copy of the demo bank, with the fill after a miss on. Each day (as-of dates from --first),
every account asks its bill-change question once, one request at a time; between days the canonical
answers queued by the misses are left to finish. Printed per day: the share served from the cache
and P50/P99 of all answers. Run it on two builds of the service to compare them (the table says
which commit ran).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import time
from datetime import date, timedelta

import msgspec

from app.replay.http import Pool, post
from app.reports.stats import percentile
from bench.common import demo_database, service
from bench.overhead import QUESTION, fake_engine


async def _day(port: int, key: str, refs: list[str], as_of: date) -> tuple[list[float], int]:
    pool = Pool("127.0.0.1", port)
    latencies, hits = [], 0
    for ref in refs:
        body = msgspec.json.encode({"account_ref": ref, "question": QUESTION, "as_of": as_of.isoformat()})
        started = time.perf_counter()
        auth = {"Authorization": f"Bearer {key}"}
        reply = await pool.request(post("127.0.0.1", port, "/v1/explanations", body, auth))
        latencies.append((time.perf_counter() - started) * 1000)
        assert reply.status == 200, reply.body[:200]
        hits += msgspec.json.decode(reply.body)["source"] == "cache"
    pool.close()
    await asyncio.sleep(2.0)  # the canonical answers queued at batch priority finish
    return latencies, hits


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--accounts", type=int, default=40)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--first", type=date.fromisoformat, default=date(2026, 11, 10))
    parser.add_argument("--service-ms", type=float, default=300.0, help="the fake engine's time per answer")
    parser.add_argument("--step", type=int, default=1, help="days between rounds (0: the same day again)")
    args = parser.parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    with demo_database() as (url, key, refs), fake_engine(args.service_ms / 1000) as engine:
        env = {**engine.env, "ANSWER_CACHE_FILL": "1", "ENGINE_CAPACITY": "8"}
        with service(url, env) as port:
            days = [args.first + timedelta(days=n * args.step) for n in range(args.days)]
            results = [asyncio.run(_day(port, key, refs[: args.accounts], day)) for day in days]
    print(
        f"commit {commit}: {args.accounts} accounts ask their bill-change question once a day,"
        f" fake SGLang at {args.service_ms:.0f} ms per answer"
    )
    print(f"{'as of':<12} {'from cache':>10} {'P50 ms':>8} {'P99 ms':>8}")
    every: list[float] = []
    for day, (latencies, hits) in zip(days, results, strict=True):
        every += latencies
        print(
            f"{day.isoformat():<12} {hits / len(latencies):>10.0%} {percentile(latencies, 50):>8.1f}"
            f" {percentile(latencies, 99):>8.1f}"
        )
    hits = sum(h for _, h in results)
    print(f"{'all days':<12} {hits / len(every):>10.0%} {percentile(every, 50):>8.1f} {percentile(every, 99):>8.1f}")
