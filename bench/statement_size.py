"""Does an answer's cost grow with the statement's length? One explanation, engine off, in process.

    ./scripts/dev bench statement-size [--sizes 20,1000,10000] [--requests 300] [--merchants 20] [--question Q]

A scratch database holds one account per size whose last two statements have that many lines each
(purchases at up to --merchants merchants, a fee every 200 lines, a payment). The merchants are the
same for every size: each is a driver that the answer lists, so more of them is more to say. The app
answers "Why is my bill higher than last month?" for each account in turn (round robin, so the
machine's noise falls on every size alike), through ASGI with ENGINE=off (the deterministic answer:
the history read, the facts, the audit row, no engine); printed: P50 and P90 wall ms per size and
each size's P50 against the smallest.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import time
from datetime import date, timedelta
from typing import Any

import msgspec
import uvloop

from app.api.app import create_app
from app.data.database import create_engine
from app.data.import_format import parse
from app.data.importer import import_file
from app.data.tenants import create_tenant, issue_api_key, set_limits
from app.settings import Settings
from bench.common import scratch_database
from bench.in_process import _call
from bench.overhead import AS_OF, QUESTION, QUIET

PERIODS = [(date(2026, 9, 1), date(2026, 9, 30)), (date(2026, 10, 1), date(2026, 10, 31))]


def account(size: int, merchants: int, rng: random.Random) -> dict[str, Any]:
    """An account whose last two statements have `size` lines each, at up to `merchants` merchants."""
    lines = []
    for start, end in PERIODS:
        for i in range(size):
            day = start + timedelta(days=rng.randrange((end - start).days + 1))
            kind = "fee" if i % 200 == 7 else "payment" if i == 0 else "purchase"
            lines.append({
                "ref": f"T-{start:%m}-{i}", "posted_on": day.isoformat(), "kind": kind,
                "amount": f"{rng.randint(100, 20000) / 100:.2f}",
                "merchant": f"Merchant {rng.randrange(merchants):03d}" if kind == "purchase" else None,
                "description": "Late fee" if kind == "fee" else None,
            })  # fmt: skip
    statements = [
        {"period_start": s.isoformat(), "period_end": e.isoformat(),
         "due_date": (e + timedelta(days=25)).isoformat(), "minimum_due": "25.00"}
        for s, e in PERIODS
    ]  # fmt: skip
    return {
        "ref": f"ACC-{size}", "kind": "credit_card", "currency": "EUR", "masked_number": "**** 0001",
        "opening_balance": "0.00", "statements": statements, "transactions": lines,
    }  # fmt: skip


async def _seed(url: str, sizes: list[int], merchants: int) -> str:
    rng = random.Random(7)
    doc = {
        "tenant": "sizes",
        "customers": [
            {"ref": f"C-{size}", "name": "Size Test", "locale": "en", "accounts": [account(size, merchants, rng)]}
            for size in sizes
        ],
    }
    engine = create_engine(url)
    async with engine.begin() as conn:
        tenant_id = await create_tenant(conn, "sizes", "Statement sizes", "standard")
        key = await issue_api_key(conn, tenant_id, "bench")
        await set_limits(conn, "sizes", {"rate_limit_per_s": 1e6})
        await import_file(conn, parse(msgspec.json.encode(doc)))
    await engine.dispose()
    return key


async def _measure(app: Any, key: str, sizes: list[int], requests: int, question: str) -> dict[int, list[float]]:
    auth = [(b"authorization", f"Bearer {key}".encode())]
    bodies = {
        size: msgspec.json.encode({"account_ref": f"ACC-{size}", "question": question, "as_of": AS_OF})
        for size in sizes
    }
    times: dict[int, list[float]] = {size: [] for size in sizes}
    async with app.lifespan():
        for size in sizes:  # warm-up, and a check that each answers
            status, reply = await _call(app, bodies[size], auth)
            if status != 200:
                raise SystemExit(f"ACC-{size}: HTTP {status} {reply[:200]!r}")
        for _ in range(requests):
            for size in sizes:
                started = time.perf_counter()
                await _call(app, bodies[size], auth)
                times[size].append((time.perf_counter() - started) * 1000)
    return times


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="20,1000,10000", help="lines per statement, comma-separated")
    parser.add_argument("--requests", type=int, default=300, help="requests per size")
    parser.add_argument(
        "--merchants", type=int, default=20, help="merchants per account (each one a driver the answer lists)"
    )
    parser.add_argument(
        "--question", default=QUESTION, help="e.g. one naming a merchant: its lines are read beyond the named ones"
    )
    args = parser.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    with scratch_database() as url:
        key = asyncio.run(_seed(url, sizes, args.merchants))
        app = create_app(Settings.from_env({**os.environ, **QUIET, "ENGINE": "off", "BATCH_WORKER": "0"}), url)
        times = uvloop.run(_measure(app, key, sizes, args.requests, args.question))
    base = statistics.median(times[sizes[0]])
    print(
        f"POST /v1/explanations, ENGINE=off, in process, {args.requests} requests per size, round robin, "
        f"up to {args.merchants} merchants per statement: {args.question!r}"
    )
    print(f"{'lines/statement':>15} {'P50 ms':>8} {'P90 ms':>8} {'P50 / smallest':>15}")
    for size in sizes:
        p50, p90 = statistics.median(times[size]), statistics.quantiles(times[size], n=10)[-1]
        print(f"{size:>15,} {p50:>8.2f} {p90:>8.2f} {p50 / base:>14.2f}x")
