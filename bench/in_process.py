"""The service's own CPU per answer, with nothing else on the cores: the app in this process, called
straight through ASGI (no sockets, no HTTP server, no load generator), one request at a time.

    ./scripts/dev bench in-process [--requests 3000] [--paths model,engine-off,cache-hit] [--profile DIR]

The open-loop bench (`bench overhead`) shares two cores between the server, the load generator, the
fake engine and Postgres, so its CPU per request moves by ±10 % from run to run; this one measures
what the app's own code costs — routing, auth, the history query, facts, prompt, engine client,
validation, the audit row — with the same requests and paths (the fake SGLang server, in its own
process, as a zero-latency engine; Postgres as always), and is steady enough to tell a change of a
few per cent. Each path asks, after one warm-up request per account, only the accounts whose answer
comes from where the path says (the fake answers in English: the zh-CN accounts' model answers fall
back, and are never cached). Per path: CPU ms (this process's user + system time) and wall ms per request; with
`--profile`, a cProfile of each path (`python -m pstats DIR/<path>.prof`).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import uvloop

from app.api.app import create_app
from app.settings import Settings
from bench.common import demo_database
from bench.overhead import AS_OF, QUESTION, QUIET, fake_engine, precompute

SOURCES = {"model": "model", "engine-off": "fallback", "cache-hit": "cache"}  # where each path's answers come from


async def _call(app: Any, body: bytes, headers: list[tuple[bytes, bytes]]) -> tuple[int, bytes]:
    """One POST /v1/explanations through the app's ASGI interface: its status and body."""
    sent: list[dict[str, Any]] = []
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await asyncio.Event().wait()  # the client never goes away
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
        "method": "POST", "scheme": "http", "path": "/v1/explanations", "raw_path": b"/v1/explanations",
        "query_string": b"", "root_path": "", "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80),
        "headers": [(b"host", b"bench"), (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()), *headers],
    }  # fmt: skip
    await app(scope, receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


async def _measure(
    app: Any, key: str, refs: list[str], source: str, requests: int, profile: Path | None
) -> tuple[float, float, dict[str, str]]:
    """CPU and wall ms per request, asking only the accounts whose answer comes from `source`."""
    auth = [(b"authorization", f"Bearer {key}".encode())]

    def body(ref: str) -> bytes:
        return msgspec.json.encode({"account_ref": ref, "question": QUESTION, "as_of": AS_OF})

    async with app.lifespan():
        sources = {}
        for ref in refs:  # each account once: warm-up, and where the answers come from
            status, reply = await _call(app, body(ref), auth)
            sources[ref] = str(msgspec.json.decode(reply)["source"]) if status == 200 else f"http {status}"
        # The fake answers in English: the zh-CN accounts' model answers fall back, and are not cached.
        refs = [ref for ref in refs if sources[ref] == source]
        profiler = cProfile.Profile() if profile else None
        cpu, wall = time.process_time(), time.perf_counter()
        if profiler:
            profiler.enable()
        for i in range(requests):
            await _call(app, body(refs[(i * 7919) % len(refs)]), auth)
        if profiler and profile:
            profiler.disable()
            profiler.dump_stats(profile)
        return (time.process_time() - cpu) * 1000 / requests, (time.perf_counter() - wall) * 1000 / requests, sources


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=3000, help="requests per path (after one per account)")
    parser.add_argument("--paths", default="model,engine-off,cache-hit", help="which paths, comma-separated")
    parser.add_argument("--profile", type=Path, help="a folder: a cProfile of each path into it (slower)")
    args = parser.parse_args(argv)
    paths = args.paths.split(",")
    if not set(paths) <= {"model", "engine-off", "cache-hit"}:
        parser.error(f"unknown path in --paths: {args.paths}")
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)

    rows = []
    with fake_engine() as engine, demo_database() as (url, key, refs):
        env = {
            "model": engine.env,
            "engine-off": {**QUIET, "ENGINE": "off", "BATCH_WORKER": "0"},
            "cache-hit": engine.env,
        }
        for path in paths:
            if path == "cache-hit":
                precompute(url, engine)
            app = create_app(Settings.from_env({**os.environ, **env[path]}), url)
            profile = args.profile / f"{path}.prof" if args.profile else None
            cpu, wall, sources = uvloop.run(_measure(app, key, refs, SOURCES[path], args.requests, profile))
            print(f"{path}: {len(refs)} accounts asked once, answers by source: "
                  f"{dict(Counter(sources.values()))}; the {SOURCES[path]!r} ones measured", flush=True)  # fmt: skip
            rows.append((path, cpu, wall))

    print(f"POST /v1/explanations in process (ASGI, no network), one at a time, {args.requests} requests per path"
          + (", under cProfile" if args.profile else ""))  # fmt: skip
    print(f"{'path':<11} {'CPU ms/req':>10} {'wall ms/req':>11}")
    for path, cpu, wall in rows:
        print(f"{path:<11} {cpu:>10.3f} {wall:>11.3f}")
