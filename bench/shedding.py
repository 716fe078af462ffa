"""Shedding follows priority: a batch flood never makes the service refuse live requests.

    ./scripts/dev bench shedding [--duration 20] [--service-ms 500] [--capacity 4] [--max-in-flight 64]

The whole service (`bill-assistant serve`, one worker) in front of the fake SGLang server in a
process of its own, answering each request after --service-ms; ENGINE_CAPACITY=--capacity, so the
engine answers capacity / service time requests a second. Two banks on a scratch database: an
interactive one sending live api traffic (level 1) and a batch-class one sending batch traffic
(level 0), open-loop Poisson on POST /v1/explanations with a question the model answers (no answer
cache). Phases of --duration seconds, side by side in one run:

- live alone at 40% of the engine's capacity (the unloaded baseline);
- the same live traffic beside batch at 2x and at 4x the capacity;
- live alone at 2x the capacity (the guard must still protect the process).

Prints per phase and class: sent, answered, refused (503/429, and any without Retry-After), other
errors, P50/P99 of the answered ones; and live P99 over the baseline's. Goals: 0 live refused beside
batch, live P99 <= 1.5x the baseline, every refusal with Retry-After; live alone at 2x sheds.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
from collections.abc import Callable

import msgspec
import uvloop
from sqlalchemy import text

from app import demo
from app.data.database import create_engine
from app.data.import_format import parse
from app.data.importer import import_file
from app.data.tenants import create_tenant, issue_api_key, set_limits
from app.replay.http import post
from bench.common import scratch_database, service
from bench.loadgen import Result, open_loop
from bench.overhead import AS_OF, QUESTION, fake_engine

LIVE_SHARE = 0.4
BATCH_MULTIPLES = (2, 4)


@dataclasses.dataclass
class Bank:
    key: str
    refs: list[str]


async def _seed(url: str) -> tuple[Bank, Bank]:
    """Northbridge (interactive) and a batch-class bank with the same demo customers; no rate limits."""
    live = demo.TENANTS[0]
    jobs = dataclasses.replace(live, slug="batch-jobs", name="Batch Jobs Bank", priority_class="batch")
    banks = []
    engine = create_engine(url)
    async with engine.begin() as conn:
        for tenant in (live, jobs):
            tenant_id = await create_tenant(conn, tenant.slug, tenant.name, tenant.priority_class)
            key = await issue_api_key(conn, tenant_id, "bench")
            await set_limits(conn, tenant.slug, {"rate_limit_per_s": 1e6, "max_concurrency": 1000})
            await import_file(conn, parse(msgspec.json.encode(demo.generate(tenant))))
            refs = await conn.execute(text("SELECT ref FROM accounts WHERE tenant_id = :t"), {"t": tenant_id})
            banks.append(Bank(key, list(refs.scalars())))
    await engine.dispose()
    return banks[0], banks[1]


def _requests(port: int, bank: Bank, channel: str) -> Callable[[int], bytes]:
    headers = {"Authorization": f"Bearer {bank.key}"}

    def make(i: int) -> bytes:
        # A distinct question each time: nothing is served from the answer cache.
        body = {"account_ref": bank.refs[i % len(bank.refs)], "question": f"{QUESTION} ({i})", "as_of": AS_OF}
        body["channel"] = channel
        return post("127.0.0.1", port, "/v1/explanations", msgspec.json.encode(body), headers)

    return make


async def _phase(
    port: int, live: Bank, jobs: Bank, live_rate: float, batch_rate: float, duration_s: float
) -> tuple[Result, Result | None]:
    runs = [open_loop("127.0.0.1", port, live_rate, duration_s, _requests(port, live, "api"), seed=1)]
    if batch_rate:
        runs.append(open_loop("127.0.0.1", port, batch_rate, duration_s, _requests(port, jobs, "batch"), seed=2))
    results = await asyncio.gather(*runs)
    return results[0], results[1] if batch_rate else None


def _row(phase: str, who: str, r: Result) -> str:
    refused = sum(n for status, n in r.errors.items() if status in ("429", "503"))
    other = sum(n for status, n in r.errors.items() if status not in ("429", "503"))
    sent = len(r.latencies_ms) + sum(r.errors.values())
    return (
        f"{phase:<22} {who:<6} {sent:>6} {len(r.latencies_ms):>8} {refused:>8} {r.no_retry_after:>10} {other:>6}"
        f" {r.percentile(50):>8.0f} {r.percentile(99):>8.0f}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=20.0, help="seconds per phase")
    parser.add_argument("--service-ms", type=float, default=500.0, help="the fake engine's time per answer")
    parser.add_argument("--capacity", type=int, default=4, help="ENGINE_CAPACITY")
    parser.add_argument("--max-in-flight", type=int, default=64, help="MAX_IN_FLIGHT")
    args = parser.parse_args(argv)

    rate = args.capacity / (args.service_ms / 1000)  # answers/s the engine can give
    env = {"ENGINE_CAPACITY": str(args.capacity), "MAX_IN_FLIGHT": str(args.max_in_flight)}
    with scratch_database() as url, fake_engine(args.service_ms / 1000) as engine:
        live, jobs = uvloop.run(_seed(url))
        with service(url, {**engine.env, **env}) as port:

            def run(live_rate: float, batch_rate: float) -> tuple[Result, Result | None]:
                return uvloop.run(_phase(port, live, jobs, live_rate, batch_rate, args.duration))

            run(rate * LIVE_SHARE, 0)  # warm-up
            print(
                f"POST /v1/explanations through the whole service, fake SGLang at {args.service_ms:.0f} ms per answer,"
                f" ENGINE_CAPACITY={args.capacity} ({rate:g} answers/s), MAX_IN_FLIGHT={args.max_in_flight},"
                f" {args.duration:g} s per phase"
            )
            print(
                f"{'phase':<22} {'class':<6} {'sent':>6} {'answered':>8} {'refused':>8} {'no Retry':>10} {'other':>6}"
                f" {'P50 ms':>8} {'P99 ms':>8}"
            )
            base, _ = run(rate * LIVE_SHARE, 0)
            print(_row(f"live {LIVE_SHARE:.0%} alone", "live", base))
            for multiple in BATCH_MULTIPLES:
                loaded, batch = run(rate * LIVE_SHARE, rate * multiple)
                assert batch is not None
                phase = f"live {LIVE_SHARE:.0%} + batch {multiple}x"
                print(_row(phase, "live", loaded))
                print(_row(phase, "batch", batch))
                print(f"{'':<22} live P99 / alone: {loaded.percentile(99) / base.percentile(99):.2f}x")
            alone, _ = run(rate * 2, 0)
            print(_row("live 2x alone", "live", alone))
