"""Open-loop load on POST /v1/explanations over seeded demo data.

    ./scripts/dev bench explain [--rates 50,100,200,300] [--duration 20]

Creates a scratch database (on DATABASE_URL's server, or the embedded Postgres), seeds the demo
banks, starts `bill-assistant serve` as a separate process, and drives it at each rate in turn,
printing one table: achieved requests/s and P50/P90/P99/max latency per offered rate. The engine is
off (ENGINE=off): this measures everything around it; bench/prefix_cache.py measures the engine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import subprocess
import sys
import time
import urllib.request
from typing import Any

import msgspec
import uvloop
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from app import demo
from app.data.database import create_engine, migrate, resolve_database_url
from app.data.importer import import_file, parse
from app.data.tenants import create_tenant, issue_api_key, set_limits
from app.replay.http import post
from app.settings import get_settings
from bench.loadgen import open_loop

QUESTIONS = [
    ("Why is my bill higher than last month?", None),
    ("What is this charge?", None),
    ("为什么这个月的账单比上个月多？", "zh-CN"),
    ("Did my payment arrive?", "en"),
]


async def _admin(url: str, statement: str) -> None:
    engine = create_async_engine(url, isolation_level="AUTOCOMMIT")
    async with engine.connect() as conn:
        await conn.execute(text(statement))
    await engine.dispose()


async def _prepare(url: str) -> tuple[str, list[str]]:
    """Seed the first demo bank; return its API key and its account refs."""
    tenant = demo.TENANTS[0]
    engine = create_engine(url)
    async with engine.begin() as conn:
        tenant_id = await create_tenant(conn, tenant.slug, tenant.name, tenant.priority_class)
        key = await issue_api_key(conn, tenant_id, "bench")
        await set_limits(conn, tenant.slug, {"rate_limit_per_s": 1e6})  # measure the service, not the rate limit
        await import_file(conn, parse(msgspec.json.encode(demo.generate(tenant))))
        refs = list(
            (await conn.execute(text("SELECT ref FROM accounts WHERE tenant_id = :t"), {"t": tenant_id})).scalars()
        )
    await engine.dispose()
    return key, refs


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(port: int, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("the service did not become ready")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", default="50,100,200,300", help="offered requests/s, comma-separated")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds per rate")
    parser.add_argument("--target-rate", type=float, default=200.0)
    parser.add_argument("--target-p99-ms", type=float, default=25.0)
    args = parser.parse_args(argv)
    rates = [float(r) for r in args.rates.split(",")]

    admin = resolve_database_url(get_settings())
    name = f"bill_bench_{os.getpid()}"
    asyncio.run(_admin(admin, f'CREATE DATABASE "{name}"'))
    url = make_url(admin).set(database=name).render_as_string(hide_password=False)
    server = None
    try:
        migrate(url)
        key, refs = asyncio.run(_prepare(url))
        port = _free_port()
        # The deterministic path: this measures the service around the engine (the engine has its own bench).
        env = {**os.environ, "DATABASE_URL": url, "ENGINE": "off"}
        server = subprocess.Popen(
            [sys.executable, "-m", "app", "serve", "--port", str(port)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        _wait_ready(port)
        rng = random.Random(7)
        headers = {"Authorization": f"Bearer {key}"}

        def make_request(i: int) -> bytes:
            question, locale = QUESTIONS[i % len(QUESTIONS)]
            body: dict[str, Any] = {"account_ref": rng.choice(refs), "question": question}
            if locale:
                body["locale"] = locale
            return post("127.0.0.1", port, "/v1/explanations", msgspec.json.encode(body), headers)

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
    finally:
        if server:
            server.terminate()
            server.wait(10)
        asyncio.run(_admin(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
