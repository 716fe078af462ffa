"""A process killed mid-burst, restarted at once: does anyone wait on its engine slots?

    ./scripts/dev bench killed-slots [--requests 150] [--delay 0.2] [--capacity 8]

The fake SGLang engine (each answer takes `--delay` s) behind one `serve` process with shared
admission, ENGINE_CAPACITY `--capacity`, on a scratch demo bank. Each round fires a burst of 8×
capacity questions, so every engine slot is held, then stops the process and starts a new one at
once, and asks `--requests` questions (the answer cache's fill off: every one goes to the engine) from 16
clients. Two rounds side by side: the process stopped with SIGTERM (it drains and gives its slots
back) and with SIGKILL (nothing given back: its leases stay in Postgres until its heartbeat lapses,
app/data/admission.py). Printed per round: the restart, then P50/P95/max latency, answers by the
model, fallbacks and refusals. With slots reclaimed by heartbeat the two rounds match; before, a
SIGKILL round waited up to the leases' 15 s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import time
import urllib.request

import msgspec

from app.replay.http import Pool, post
from app.reports.stats import percentile
from bench.common import demo_database, free_port
from bench.overhead import AS_OF, QUESTION, fake_engine

CLIENTS = 16


def _start(port: int, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], float]:
    """`serve` on `port`, and the seconds until /ready answered 200."""
    began = time.monotonic()
    command = [sys.executable, "-m", "app", "serve", "--port", str(port), "--workers", "1"]
    proc = subprocess.Popen(command, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=1) as r:
                if r.status == 200:
                    return proc, time.monotonic() - began
        except OSError:
            if proc.poll() is not None or time.monotonic() - began > 60:
                raise RuntimeError("serve did not become ready") from None
            time.sleep(0.05)


def _body(port: int, key: str, ref: str) -> bytes:
    payload = msgspec.json.encode({"account_ref": ref, "question": QUESTION, "as_of": AS_OF})
    return post("127.0.0.1", port, "/v1/explanations", payload, {"Authorization": f"Bearer {key}"})


async def _ask_all(port: int, key: str, refs: list[str]) -> tuple[list[float], dict[str, int]]:
    """Every ref asked once, by CLIENTS at a time: the latencies (ms) and the outcomes."""
    pool, todo, latencies = Pool("127.0.0.1", port), list(refs), []
    outcomes: dict[str, int] = {}

    async def client() -> None:
        while todo:
            ref = todo.pop()
            began = time.perf_counter()
            reply = await pool.request(_body(port, key, ref))
            latencies.append((time.perf_counter() - began) * 1000)
            what = str(msgspec.json.decode(reply.body)["source"]) if reply.status == 200 else f"http {reply.status}"
            outcomes[what] = outcomes.get(what, 0) + 1

    await asyncio.gather(*(client() for _ in range(CLIENTS)))
    pool.close()
    return latencies, outcomes


async def _burst(port: int, key: str, refs: list[str]) -> list[asyncio.Task[object]]:
    pool = Pool("127.0.0.1", port)
    return [asyncio.create_task(pool.request(_body(port, key, ref))) for ref in refs]


def _round(stop: signal.Signals, env: dict[str, str], key: str, burst: list[str], asked: list[str]) -> str:
    port = free_port()
    first, _ = _start(port, env)

    async def fire() -> None:
        tasks = await _burst(port, key, burst)
        await asyncio.sleep(1.0)  # every slot taken, the rest queued
        first.send_signal(stop)
        await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(fire())
    first.wait(60)
    second, ready_s = _start(port, env)
    try:
        latencies, outcomes = asyncio.run(_ask_all(port, key, asked))
    finally:
        second.terminate()
        second.wait(60)
    said = ", ".join(f"{n} {what}" for what, n in sorted(outcomes.items()))
    return (
        f"{stop.name:8} | {ready_s:5.1f} s | {percentile(latencies, 50):7.0f} | {percentile(latencies, 95):7.0f} |"
        f" {max(latencies):7.0f} | {said}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=150)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds each engine answer takes")
    parser.add_argument("--capacity", type=int, default=8)
    args = parser.parse_args(argv)
    with fake_engine(args.delay) as engine, demo_database() as (url, key, refs):
        env = {**engine.env, "DATABASE_URL": url, "ADMISSION": "shared", "SESSION_SECRET": "bench",
               "ENGINE_CAPACITY": str(args.capacity)}  # fmt: skip
        burst_size = 8 * args.capacity
        # With ANSWER_CACHE_FILL off nothing is cached (only fills are): asking again is a model answer.
        burst = [refs[i % len(refs)] for i in range(burst_size)]
        asked = [refs[(i * 7) % len(refs)] for i in range(args.requests)]
        print(f"{args.requests} questions from {CLIENTS} clients after a restart; engine answers take {args.delay} s,")
        print(f"capacity {args.capacity}; stopped mid-burst of {burst_size}. Latency in ms.\n")
        print("stopped  | ready   |     P50 |     P95 |     max | answers")
        for stop in (signal.SIGTERM, signal.SIGKILL):
            print(_round(stop, env, key, burst, asked))
