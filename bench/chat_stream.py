"""When does a customer see something? The streaming chat widget against the JSON API, side by side.

    ./scripts/dev bench chat [--accounts 16]

Starts `bill-assistant serve` (embedded engine) on a scratch copy of the demo bank and asks each
account's bill-change question once, one request at a time, alternating: even accounts through
`POST /v1/chat` (a customer session, Server-Sent Events), odd ones through `POST /v1/explanations`.
Every account is asked once, so no answer comes from the answer cache. For the stream: the time to
the `facts` event (the numbers), to the first `delta` (the first words) and to `final`; for the
JSON API, the time to the whole answer, which is when its numbers appear too. P50 and P99, and how
many chat answers were the model's (the others end with a `replace` event: the deterministic answer).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

import httpx
from sqlalchemy import text

from app.data.database import create_engine
from app.reports.stats import percentile
from bench.common import demo_database, service

QUESTION = "Why is my bill higher than last month?"
BODY = {"question": QUESTION, "as_of": "2026-11-15", "locale": "en"}


async def _customers(url: str, refs: list[str]) -> dict[str, str]:
    engine = create_engine(url)
    async with engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT a.ref, c.ref FROM accounts a JOIN customers c ON c.id = a.customer_id WHERE a.ref = ANY(:r)"),
            {"r": refs},
        )
        owners = {account: customer for account, customer in rows}
    await engine.dispose()
    return owners


async def _stream(client: httpx.AsyncClient, key: str, customer: str, ref: str) -> dict[str, float]:
    session = await client.post(
        "/v1/sessions", json={"customer_ref": customer}, headers={"Authorization": f"Bearer {key}"}
    )
    token = session.json()["token"]
    marks: dict[str, float] = {}
    started = time.perf_counter()
    headers = {"Authorization": f"Bearer {token}"}
    async with client.stream("POST", "/v1/chat", json={"account_ref": ref, **BODY}, headers=headers) as reply:
        async for line in reply.aiter_lines():
            if line.startswith("event:"):
                marks.setdefault(line[6:].strip(), (time.perf_counter() - started) * 1000)
    return marks


async def _answer(client: httpx.AsyncClient, key: str, ref: str) -> float:
    started = time.perf_counter()
    reply = await client.post(
        "/v1/explanations", json={"account_ref": ref, **BODY}, headers={"Authorization": f"Bearer {key}"}
    )
    reply.raise_for_status()
    return (time.perf_counter() - started) * 1000


async def _run(
    port: int, url: str, key: str, refs: list[str], concurrency: int
) -> tuple[list[dict[str, float]], list[float]]:
    """`concurrency` customers at once, each taking the next account as soon as it has its answer."""
    owners = await _customers(url, refs)
    streams: list[dict[str, float]] = []
    answers: list[float] = []
    todo = list(enumerate(refs))
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:

        async def customer() -> None:
            while todo:
                i, ref = todo.pop(0)
                if i % 2 == 0:
                    streams.append(await _stream(client, key, owners[ref], ref))
                else:
                    answers.append(await _answer(client, key, ref))

        await asyncio.gather(*(customer() for _ in range(concurrency)))
    return streams, answers


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--accounts", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=1, help="customers asking at once")
    args = parser.parse_args(argv)
    env = {"ENGINE": "embedded", "QUEUE_DEADLINE_SCALE": "60", "ENGINE_TIMEOUT_S": "60", "LOG_LEVEL": "WARNING"}
    with demo_database() as (url, key, refs), service(url, env) as port:
        streams, answers = asyncio.run(_run(port, url, key, refs[: args.accounts], args.concurrency))
    print(f"{args.concurrency} customer(s) at once, embedded engine (SmolLM2-135M Q4_1), {os.cpu_count()} cores")
    served = sum("replace" not in s for s in streams)
    print(f"chat answers served as the model's: {served} of {len(streams)} (the rest: the deterministic one)")
    print(f"{'what the customer sees':<40} {'requests':>8} {'P50 ms':>9} {'P99 ms':>9}")
    rows = [
        ("chat: the numbers (facts event)", [s["facts"] for s in streams]),
        ("chat: the first words (first delta)", [s["delta"] for s in streams if "delta" in s]),
        ("chat: the checked answer (final event)", [s["final"] for s in streams]),
        ("JSON API: numbers and answer together", answers),
    ]
    for name, values in rows:
        print(f"{name:<40} {len(values):>8} {percentile(values, 50):>9.1f} {percentile(values, 99):>9.1f}")
    api = percentile(answers, 50)
    print(f"numbers on screen {api / percentile(rows[0][1], 50):.0f}x sooner at P50; "
          f"first words {api / percentile(rows[1][1], 50):.1f}x sooner than the JSON API's whole answer")  # fmt: skip
