"""The service's own cost around the engine: the model's answer, the engine off, a cache hit, side by side.

    ./scripts/dev bench overhead [--rates 10,50,100,200] [--duration 10] [--paths model,engine-off,cache-hit,floor]

One scratch copy of the demo bank; `bill-assistant serve` in its own process, once per path, each
driven open loop (Poisson) on POST /v1/explanations with the same requests: a bill-change question
on a random account, as of a fixed date. The paths:

- model: ENGINE=sglang on the project's fake SGLang server (bench/fakes/sglang_server.py, in its own
  process) as a zero-latency engine (no token delay) that writes the plan the prompt's FACTS hold
  (the change and its largest cause), so the model's answer is served; ANSWER_CACHE_FILL=0 and
  BATCH_WORKER=0, so nothing fills the cache and every request goes to the engine. The engine costs
  nothing here: its latency is the service's.
- engine off: ENGINE=off, the deterministic answer.
- cache hit: the same fake engine, after `bill-assistant precompute --today <as-of>` answered every
  statement's canonical bill-change question; every request is answered from the answer cache.

- engine (with the model path): the fake engine alone, driven straight with the last request the
  service sent it, at the same rates: the engine's own latency, which the model path's includes. The
  model path's P50 less the engine's is what the service adds over it (the P99s are printed side
  by side: percentiles of two runs do not subtract).
- floor: the same requests to apps that do nothing of the service's own (bench/floor_app.py), under
  the same uvicorn settings: the HTTP server alone ("http"), with one durable write as every answer
  makes ("write": an INSERT committed synchronously), and that write in a bare Litestar route
  ("litestar"). The cache hit's P50 less the write's is what the service's own code adds to it.

Per path and rate: achieved requests/s, P50/P90/P99 latency and the server process's CPU time
(utime + stime from /proc/<pid>/stat, before and after the rate) per request handled (answered or
refused with 503); then the ratios.
Last, the floor under every statement the service runs: a trivial Postgres round trip back to back,
and spaced as the requests at each rate (each one then wakes a sleeping process, twice).
Before each path's load, every account is asked once and the answers' sources are counted (that
they are what the path claims) and the server warmed up.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import random
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import msgspec
import uvloop

from app.data.connecting import asyncpg_dsn
from app.replay.http import Pool, post
from app.reports.stats import percentile
from bench.common import demo_database, free_port, ready_process, service_process
from bench.loadgen import Result, open_loop
from bench.stacks import shares, table

AS_OF = "2026-11-15"
QUESTION = "Why is my bill higher than last month?"
QUIET = {"LOG_LEVEL": "WARNING"}
ENGINE_ALONE = "engine"  # the fake engine without the service (its CPU: the fake's process)
FLOORS = ("http", "write", "litestar")  # bench/floor_app.py


def _model_plan(prompt: str) -> str:
    """The plan a truthful model writes for a bill-change question (app/domain/plan.py): the change
    and its largest cause, as the prompt's FACTS give them (its last FACTS block: the examples come
    first)."""
    from bench.fakes.plans import plan

    facts = prompt.rsplit("FACTS\n", 1)[-1]
    change = re.search(r"^change: (up|down|same)$", facts, re.M)
    claims = [{"claim": "change", "direction": change[1] if change else "same"}]
    if driver := re.search(r"^driver 1: .*, (up|down)$", facts, re.M):
        claims.append({"claim": "driver", "n": 1, "direction": driver[1]})
    return plan(*claims)


def _fake_engine(conn: Connection, delay_s: float) -> None:
    """The fake SGLang server, answering after `delay_s`, in this (child) process until the parent
    hangs up."""
    from bench.fakes.sglang_server import RunningFake, Script

    running = RunningFake()
    running.fake.answer_for = lambda prompt: Script(text=_model_plan(prompt), hang_s=delay_s, token_delay_s=0.0)
    # The fake's radix-cache bookkeeping compares each prompt with every earlier one: quadratic over
    # a run's thousands of requests. The service does not need it here.
    running.fake.cached_tokens = lambda prompt: 0  # type: ignore[method-assign]
    conn.send(running.url)
    with contextlib.suppress(EOFError):
        while conn.recv() == "last request":  # what the service sent last, to replay without it
            conn.send(running.fake.requests[-1])
    running.stop()


class FakeEngine:
    """The fake engine's process, as the benches use it: its URL, its pid (for its CPU time), the
    environment that points the service at it, and the last request the service sent it."""

    def __init__(self, url: str, pid: int, conn: Connection) -> None:
        self.url, self.pid, self._conn = url, pid, conn
        self.env = {**QUIET, "ENGINE": "sglang", "SGLANG_URL": url, "ANSWER_CACHE_FILL": "0", "BATCH_WORKER": "0"}

    def last_request(self) -> dict[str, object]:
        self._conn.send("last request")
        request: dict[str, object] = self._conn.recv()
        return request


@contextlib.contextmanager
def fake_engine(delay_s: float = 0.0) -> Iterator[FakeEngine]:
    """The fake SGLang server (zero latency unless given) in a process of its own, for as long as
    the block."""
    ctx = multiprocessing.get_context("spawn")
    here, there = ctx.Pipe()
    process = ctx.Process(target=_fake_engine, args=(there, delay_s), daemon=True)
    process.start()
    try:
        assert process.pid is not None
        yield FakeEngine(here.recv(), process.pid, here)
    finally:
        here.close()
        process.join(10)


def precompute(database_url: str, engine: FakeEngine) -> None:
    """`bill-assistant precompute` as of AS_OF: the canonical answers cached, for the cache-hit path."""
    subprocess.run(
        [sys.executable, "-m", "app", "precompute", "--today", AS_OF, "--days", "60"],
        env={**os.environ, **engine.env, "DATABASE_URL": database_url},
        check=True,
        stdout=subprocess.PIPE,
    )


def _cpu_s(pid: int) -> float:
    """The process's user + system CPU time, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _request(port: int, key: str, ref: str) -> bytes:
    body = msgspec.json.encode({"account_ref": ref, "question": QUESTION, "as_of": AS_OF})
    return post("127.0.0.1", port, "/v1/explanations", body, {"Authorization": f"Bearer {key}"})


async def _sources(port: int, key: str, refs: list[str]) -> dict[str, str]:
    """Each account asked once, one at a time: where its answer came from."""
    pool = Pool("127.0.0.1", port)
    sources = {}
    for ref in refs:
        reply = await pool.request(_request(port, key, ref))
        sources[ref] = str(msgspec.json.decode(reply.body)["source"]) if reply.status == 200 else f"http {reply.status}"
    pool.close()
    return sources


@dataclass
class Row:
    path: str
    rate: float
    result: Result
    cpu_ms_per_request: float


def _per_request(cpu_s: float, r: Result) -> float:
    """CPU milliseconds per request handled (answered or refused)."""
    handled = len(r.latencies_ms) + sum(r.errors.values())
    return cpu_s * 1000 / handled if handled else float("nan")


def _cpu(row: Row) -> float:
    return row.cpu_ms_per_request


def _p50(row: Row) -> float:
    return row.result.percentile(50)


def _drive(
    name: str, port: int, pid: int, key: str, refs: list[str], rates: list[float], duration: float, profile: Path | None
) -> list[Row]:
    sources = asyncio.run(_sources(port, key, refs))
    print(f"{name}: {len(refs)} accounts asked once, answers by source: {dict(Counter(sources.values()))}", flush=True)
    return _load(name, port, pid, _requests(port, key, refs), rates, duration, profile)


def _requests(port: int, key: str, refs: list[str]) -> Callable[[int], bytes]:
    """The i-th request of a run: the same sequence of accounts on every path."""
    ordered = sorted(refs)
    return lambda i: _request(port, key, ordered[(i * 7919) % len(ordered)])


def _load(
    name: str,
    port: int,
    pid: int,
    make_request: Callable[[int], bytes],
    rates: list[float],
    duration: float,
    profile: Path | None = None,
) -> list[Row]:
    uvloop.run(open_loop("127.0.0.1", port, 50, 3, make_request))  # warm-up
    rows = []
    for rate in rates:
        # py-spy samples the server during the first rate's load (a sampling profiler: a few per cent).
        raw = profile / f"{name.replace(' ', '-')}.txt" if profile and rate == rates[0] else None
        spy = _py_spy(pid, duration, raw) if raw else None
        before = _cpu_s(pid)
        r = uvloop.run(open_loop("127.0.0.1", port, rate, duration, make_request))
        rows.append(Row(name, rate, r, _per_request(_cpu_s(pid) - before, r)))
        if spy is not None and raw is not None:
            spy.wait()
            print(table(f"{name} at {rate:.0f}/s", shares(raw), rows[-1].cpu_ms_per_request))
    return rows


def _engine_alone(engine: FakeEngine, rates: list[float], duration: float) -> list[Row]:
    """The fake engine driven straight, open loop, with the last request the service sent it: its
    own latency, which the model path's includes (a zero-latency fake still parses, tokenizes and
    writes 21 events)."""
    split = urlsplit(engine.url)
    host, port = split.hostname or "127.0.0.1", split.port or 80
    raw = post(host, port, "/generate", msgspec.json.encode(engine.last_request()), {})
    rows = []
    for rate in rates:
        before = _cpu_s(engine.pid)
        r = uvloop.run(open_loop(host, port, rate, duration, lambda _: raw))
        rows.append(Row(ENGINE_ALONE, rate, r, _per_request(_cpu_s(engine.pid) - before, r)))
    return rows


def _floors(database_url: str, key: str, refs: list[str], rates: list[float], duration: float) -> list[Row]:
    """The same requests, at the same rates, to apps that do nothing of the service's own
    (bench/floor_app.py): the HTTP server alone, and with the one durable write every answer makes."""
    rows = []
    for floor in FLOORS:
        port = free_port()
        command = [sys.executable, "-m", "uvicorn", "bench.floor_app:app", "--port", str(port), "--loop", "uvloop",
                   "--http", "httptools", "--no-access-log", "--log-level", "warning"]  # fmt: skip
        with ready_process(command, port, {"FLOOR": floor, "DATABASE_URL": database_url}) as pid:
            rows += _load(f"floor {floor}", port, pid, _requests(port, key, refs), rates, duration)
    return rows


async def _round_trips(database_url: str, rates: list[float]) -> dict[float, float]:
    """The floor under every statement on this machine: the median round trip of `SELECT 1` on one
    connection, back to back (key 0) and spaced as the bench's requests at each rate (Poisson). A
    process that sleeps between requests is woken for each (a VM's idle vCPU wakes slowly)."""
    conn = await asyncpg.connect(asyncpg_dsn(database_url))
    rng = random.Random(1)
    medians = {}
    for rate in [0.0, *rates]:
        took = []
        for _ in range(min(300, max(50, int(rate * 3))) if rate else 300):  # a few seconds a rate
            if rate:
                await asyncio.sleep(rng.expovariate(rate))
            began = time.perf_counter()
            await conn.fetchval("SELECT 1")
            took.append((time.perf_counter() - began) * 1000)
        medians[rate] = percentile(took, 50)
    await conn.close()
    return medians


def _py_spy(pid: int, duration: float, out: Path) -> subprocess.Popen[bytes]:
    """`py-spy record` on the server (pip install py-spy: a measuring tool, not a dependency)."""
    command = ["py-spy", "record", "--pid", str(pid), "--rate", "250", "--duration", str(int(duration)),
               "--format", "raw", "--nonblocking", "--output", str(out)]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", default="10,50,100,200", help="offered requests/s, comma-separated")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per rate")
    parser.add_argument("--profile", type=Path, help="a folder: profile each path's first rate with py-spy into it")
    parser.add_argument("--paths", default="model,engine-off,cache-hit,floor", help="which paths, comma-separated")
    args = parser.parse_args(argv)
    paths = set(args.paths.split(","))
    if not paths <= {"model", "engine-off", "cache-hit", "floor"}:
        parser.error(f"unknown path in --paths: {args.paths}")
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    rates = [float(r) for r in args.rates.split(",")]

    rows: list[Row] = []
    with fake_engine() as engine, demo_database() as (url, key, refs):
        with service_process(url, engine.env) as (port, pid):
            # Only the accounts whose model answer is served (the fake plans what each prompt's
            # FACTS hold, in any language), the same ones on every path.
            served = asyncio.run(_sources(port, key, refs))
            refs = [ref for ref in refs if served[ref] == "model"]
            print(f"{len(refs)} of {len(served)} accounts get the model's answer; the bench asks those")
            if "model" in paths:
                rows += _drive("model", port, pid, key, refs, rates, args.duration, args.profile)
                rows += _engine_alone(engine, rates, args.duration)
        if "engine-off" in paths:
            with service_process(url, {**QUIET, "ENGINE": "off"}) as (port, pid):
                rows += _drive("engine off", port, pid, key, refs, rates, args.duration, args.profile)
        if "cache-hit" in paths:
            precompute(url, engine)
            with service_process(url, engine.env) as (port, pid):
                rows += _drive("cache hit", port, pid, key, refs, rates, args.duration, args.profile)
        if "floor" in paths:
            rows += _floors(url, key, refs, rates, args.duration)
        floor = uvloop.run(_round_trips(url, rates))

    _report(rows, rates, refs, args.duration)
    print("a Postgres round trip (SELECT 1, one connection), median: back to back "
          f"{floor[0.0]:.3f} ms; " + ", ".join(f"at {r:.0f}/s spacing {floor[r]:.3f} ms" for r in rates))  # fmt: skip


def _report(rows: list[Row], rates: list[float], refs: list[str], duration: float) -> None:
    print(f"POST /v1/explanations, open loop (Poisson), {len(refs)} accounts, {duration:.0f} s per rate, "
          f"{os.cpu_count()} cores, server, load generator and fake engine on the same machine")  # fmt: skip
    columns = ("offered/s", "achieved/s", "P50 ms", "P90 ms", "P99 ms", "CPU ms/req", "errors")
    print(f"{'path':<14} " + " ".join(f"{c:>10}" for c in columns))
    for row in rows:
        r = row.result
        errors = sum(r.errors.values())
        print(f"{row.path:<14} {row.rate:>10.0f} {r.throughput:>10.1f} {r.percentile(50):>10.2f} "
              f"{r.percentile(90):>10.2f} {r.percentile(99):>10.2f} {row.cpu_ms_per_request:>10.2f} "
              f"{errors:>10}" + (f"  {r.errors}" if errors else ""))  # fmt: skip
    by = {(row.path, row.rate): row for row in rows}
    for rate in rates if {"model", ENGINE_ALONE} <= {row.path for row in rows} else []:
        served, alone = by["model", rate].result, by[ENGINE_ALONE, rate].result
        # Percentiles of two runs do not subtract: P99s side by side, only the medians' difference.
        over = served.percentile(50) - alone.percentile(50)
        print(f"at {rate:.0f}/s: the model path's P50 over the engine alone's {over:.2f} ms; "
              f"P99 {served.percentile(99):.2f} ms, the engine alone's {alone.percentile(99):.2f} ms")  # fmt: skip
    for rate in rates if {"model", "engine off", "cache hit"} <= {row.path for row in rows} else []:
        model, off, hit = by["model", rate], by["engine off", rate], by["cache hit", rate]
        print(f"at {rate:.0f}/s: CPU/request model / engine off {_cpu(model) / _cpu(off):.2f}x, "
              f"cache hit / engine off {_cpu(hit) / _cpu(off):.2f}x; P50 cache hit / model "
              f"{_p50(hit) / _p50(model):.2f}x, model / engine off {_p50(model) / _p50(off):.2f}x")  # fmt: skip
    for rate in rates if {"cache hit", "floor write"} <= {row.path for row in rows} else []:
        hit, write = by["cache hit", rate], by["floor write", rate]
        floors = ", ".join(f"{f} {_p50(by[f'floor {f}', rate]):.2f}" for f in FLOORS)
        print(f"at {rate:.0f}/s: the cache hit's P50 over the floor with its one durable write "
              f"{_p50(hit) - _p50(write):.2f} ms (P50 ms: {floors})")  # fmt: skip
