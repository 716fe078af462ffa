"""The answer cache on replayed traffic, before and after the facts-keyed cache and the scheduled fill
(issue 24, items 4 and 5): the same exported traffic file replayed against each build.

    ./scripts/dev bench cache-replay [--before /tmp/before] [--days 5] [--day-s 20] [--rate 2] [--service-ms 300]

1. The traffic, made once with this tree: on a scratch copy of the demo bank (Northbridge), `traffic
   generate` for each of --days simulated days (--day-s seconds each at --rate requests/s: the
   question mix, both locales, widget/api/batch), each day's requests asked as of that day (the days
   ending today: the scheduled fill answers as of today), replayed open loop against this tree's
   service, then `traffic export`ed from the audit rows (personal data masked): the file replayed
   below (or --traffic FILE, such a file made before).
2. For each build: a fresh scratch database migrated and seeded by that build's own code, its
   `bill-assistant serve` (one process, from that tree) in front of the fake SGLang server in its
   own process (a truthful plan for every intent, read from the prompt's FACTS, after --service-ms),
   the fill after a miss on; the exported file replayed open loop at its recorded times. Builds:
   `before` (--before: a git worktree of the commit before item 4, 6cae552), `after, fill off`
   (this tree, CACHE_FILL_INTERVAL_S=0: item 4 alone) and `after` (this tree, the scheduled fill
   every --fill-s seconds: items 4 and 5).
Printed per build: requests, the share served from the answer cache and P50/P99 of all answers
(client end to end, from each request's scheduled time), over all days and day by day.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from multiprocessing.connection import Connection
from pathlib import Path

import msgspec
from sqlalchemy.engine import make_url

from app.data.answer_cache import cache_rows
from app.data.connecting import resolve_database_url
from app.data.database import create_engine
from app.replay.run import Sample, replay
from app.replay.traffic import Arrival, dumps, export, generate, loads, population
from app.reports.stats import percentile
from app.settings import Settings
from bench.common import _admin, free_port, ready_process

_COUNTER = itertools.count()

HERE = Path(__file__).resolve().parent.parent
# Run inside a build's tree: migrate and seed its scratch database with its own code; print the key.
SEED = (
    "import asyncio, sys; from app.data.database import migrate; from bench.common import _seed; "
    "migrate(sys.argv[1]); print(asyncio.run(_seed(sys.argv[1]))[0])"
)


def truthful_plan(prompt: str) -> str:
    """The plan a truthful model writes from the prompt's last FACTS block and its START WITH line."""
    facts = prompt.rsplit("FACTS\n", 1)[-1]
    found = re.search(r"^START WITH: (.*)$", facts, re.M)
    start = found[1] if found else ""
    claims: list[dict[str, object]]
    if start.startswith("change"):
        change = re.search(r"^change: (up|down|same)", facts, re.M)
        claims = [{"claim": "change", "direction": change[1] if change else "same"}]
        if "driver" in start and (driver := re.search(r"^driver 1: .*, (up|down)$", facts, re.M)):
            claims.append({"claim": "driver", "n": 1, "direction": driver[1]})
    elif start.startswith("transaction"):
        named = re.search(r"transaction (\d+)", start) or re.search(r"^transaction (\d+):", facts, re.M)
        claims = [{"claim": "transaction", "n": int(named[1])}] if named else [{"claim": "no_answer"}]
    elif start == "fees_interest":
        claims = [{"claim": "fees_interest"}]
    else:
        status = re.search(r"^payment status: (\w+)", facts, re.M)
        claims = [{"claim": "payment_status", "status": status[1] if status else "unpaid"}]
    return json.dumps({"claims": claims})


def _fake(conn: Connection, delay_s: float) -> None:
    from bench.fakes.sglang_server import RunningFake, Script

    running = RunningFake()
    running.fake.answer_for = lambda prompt: Script(text=truthful_plan(prompt), hang_s=delay_s, token_delay_s=0.0)
    running.fake.cached_tokens = lambda prompt: 0  # type: ignore[method-assign]  # quadratic bookkeeping, not needed
    conn.send(running.url)
    with contextlib.suppress(EOFError):
        conn.recv()
    running.stop()


@contextlib.contextmanager
def fake_engine(delay_s: float) -> Iterator[str]:
    ctx = multiprocessing.get_context("spawn")
    here, there = ctx.Pipe()
    process = ctx.Process(target=_fake, args=(there, delay_s), daemon=True)
    process.start()
    try:
        yield str(here.recv())
    finally:
        here.close()
        process.join(10)


@contextlib.contextmanager
def empty_database() -> Iterator[str]:
    """A new, empty database on DATABASE_URL's server (each build migrates it with its own
    migrations); dropped afterwards."""
    admin = resolve_database_url(Settings.from_env())
    name = f"bill_cache_replay_{os.getpid()}_{next(_COUNTER)}"
    asyncio.run(_admin(admin, f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(admin).set(database=name).render_as_string(hide_password=False)
    finally:
        asyncio.run(_admin(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@contextlib.contextmanager
def build_service(root: Path, env: dict[str, str]) -> Iterator[tuple[str, str, str]]:
    """A database migrated and seeded by the tree at `root`, and that tree's service on it; yields
    the service's URL, the demo bank's key and the database URL."""
    tree = {"PYTHONPATH": str(root), "LOG_LEVEL": "WARNING"}
    with empty_database() as database:
        seeded = subprocess.run(
            [sys.executable, "-c", SEED, database],
            cwd=root,
            env={**os.environ, **tree},
            capture_output=True,
            text=True,
            check=True,
        )
        key = seeded.stdout.strip().splitlines()[-1]
        port = free_port()
        command = [sys.executable, "-m", "app", "serve", "--port", str(port), "--workers", "1"]
        with contextlib.chdir(root), ready_process(command, port, {**tree, "DATABASE_URL": database, **env}):
            yield f"http://127.0.0.1:{port}", key, database


def make_traffic(engine_url: str, days: int, day_s: float, rate: float, accounts: int, out: Path) -> None:
    """Generated days, replayed against this tree, exported from the audit rows."""
    env = {"ENGINE": "sglang", "SGLANG_URL": engine_url, "ANSWER_CACHE_FILL": "1"}
    with build_service(HERE, env) as (url, key, database):

        async def run() -> list[Arrival]:
            db = create_engine(database)
            async with db.connect() as conn:
                people = {"northbridge": (await population(conn, ["northbridge"]))["northbridge"][:accounts]}
            arrivals: list[Arrival] = []
            for day in range(days):
                as_of = date.today() - timedelta(days=days - 1 - day)
                for a in generate(people, rate=rate, duration_s=day_s, seed=11 + day):
                    arrivals.append(msgspec.structs.replace(a, at=round(a.at + day * day_s, 4), as_of=as_of))
            since = datetime.now(UTC)
            await replay(arrivals, url, {"northbridge": key})
            await asyncio.sleep(1.0)
            async with db.connect() as conn:
                exported = await export(conn, since, datetime.now(UTC), "northbridge")
            await db.dispose()
            return exported

        out.write_bytes(dumps(asyncio.run(run())))


async def _filled(database: str, quiet_s: float = 3.0, timeout_s: float = 300.0) -> int:
    """Until the scheduled fill has answered every recently closed statement: no new answer-cache
    row for quiet_s (the statements closed before the customers ask)."""
    db = create_engine(database)
    deadline, last, since = time.monotonic() + timeout_s, -1, time.monotonic()
    while time.monotonic() < deadline and (last <= 0 or time.monotonic() - since < quiet_s):
        async with db.connect() as conn:
            now = await cache_rows(conn)
        if now != last:
            last, since = now, time.monotonic()
        await asyncio.sleep(0.5)
    await db.dispose()
    return last


def measure(root: Path, env: dict[str, str], arrivals: list[Arrival]) -> tuple[list[Sample], int]:
    """The build's service replays the file; with the scheduled fill on, once it has filled."""
    with build_service(root, env) as (url, key, database):
        filled = asyncio.run(_filled(database)) if float(env.get("CACHE_FILL_INTERVAL_S", "0")) else 0
        return asyncio.run(replay(arrivals, url, {"northbridge": key})), filled


def _line(name: str, samples: list[Sample]) -> str:
    answered = [s for s in samples if s.status == 200]
    hits = sum(s.source == "cache" for s in answered)
    e2e = [s.e2e_ms for s in answered]
    refused = len(samples) - len(answered)
    return (
        f"{name:<22} {len(samples):>5} {refused:>7} {hits / max(len(answered), 1):>10.1%}"
        f" {percentile(e2e, 50):>9.1f} {percentile(e2e, 99):>9.1f}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, help="a worktree of the commit before item 4 (6cae552)")
    parser.add_argument("--traffic", type=Path, help="an exported traffic file (default: made first)")
    parser.add_argument("--days", type=int, default=5)
    parser.add_argument("--day-s", type=float, default=20.0, help="seconds of traffic per simulated day")
    parser.add_argument("--rate", type=float, default=2.0, help="requests per second")
    parser.add_argument("--accounts", type=int, default=30, help="the demo bank's accounts that ask")
    parser.add_argument("--service-ms", type=float, default=300.0, help="the fake engine's time per answer")
    parser.add_argument("--fill-s", type=float, default=2.0, help="the scheduled fill's interval (after)")
    args = parser.parse_args(argv)
    builds: list[tuple[str, Path, dict[str, str]]] = []
    if args.before:
        builds.append(("before", args.before.resolve(), {}))
    builds += [
        ("after, fill off", HERE, {"CACHE_FILL_INTERVAL_S": "0"}),
        ("after", HERE, {"CACHE_FILL_INTERVAL_S": str(args.fill_s)}),
    ]
    commits = {
        name: subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True
        ).stdout.strip()
        for name, root, _ in builds
    }
    with fake_engine(args.service_ms / 1000) as engine_url, tempfile.TemporaryDirectory() as tmp:
        traffic = args.traffic or Path(tmp) / "exported.jsonl"
        if not args.traffic:
            make_traffic(engine_url, args.days, args.day_s, args.rate, args.accounts, traffic)
        arrivals = loads(traffic.read_bytes())
        engine = {"ENGINE": "sglang", "SGLANG_URL": engine_url, "ANSWER_CACHE_FILL": "1", "ENGINE_CAPACITY": "8"}
        runs = {name: measure(root, {**engine, **env}, arrivals) for name, root, env in builds}
    results = {name: samples for name, (samples, _) in runs.items()}
    days = sorted({a.as_of for a in arrivals if a.as_of})
    print(
        f"{len(arrivals)} exported requests over {len(days)} days ({days[0]} .. {days[-1]}), fake SGLang at "
        f"{args.service_ms:.0f} ms per answer; builds: " + ", ".join(f"{n} {c}" for n, c in commits.items())
    )
    header = f"{'build':<22} {'reqs':>5} {'refused':>7} {'from cache':>10} {'P50 ms':>9} {'P99 ms':>9}"
    print(header)
    for name, samples in results.items():
        print(_line(name, samples))
    for name, (_, filled) in runs.items():
        if filled:
            print(f"{name}: the scheduled fill had cached {filled} answers before the first request")
    for day in days:
        print(f"as of {day}:")
        for name, samples in results.items():
            print(_line(f"  {name}", [s for s in samples if arrivals[s.seq].as_of == day]))
