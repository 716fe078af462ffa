"""Three-turn conversations in the chat widget, and the handover queue's wait, under open-loop load.

    ./scripts/dev bench conversations [--rate 1] [--duration 30] [--think 1] [--prefill-ms 50] [--token-ms 20]
        [--share 0.5] [--handling 3] [--agents 3,1] [--poll 0.5] [--seed 1]

`bill-assistant serve` (one worker) on a scratch copy of the demo bank, its engine the fake SGLang
server in a process of its own, writing the plan a truthful model writes for the prompt's FACTS
(its START WITH line) at a model's pace: --prefill-ms before the first token, --token-ms per token.
Nothing comes from the answer cache (ANSWER_CACHE_FILL=0 and no canonical answers), so every turn
goes through the engine and the first words are the first checked claim.

Simulated customers arrive open loop (Poisson, --rate conversations a second for --duration
seconds), each on its own account with its own session (POST /v1/sessions), and hold a three-turn
conversation through POST /v1/chat: "Why is my bill higher than last month?", "And why?" (a
follow-up: the conversation_id the first event gave), "When is it due?", with --think seconds
(±50%, seeded) between a turn's final event and the next question. Per turn, from sending the
request: the first words (the first `delta` with text), the answer's first words (the first delta
but a follow-up's "About …: ", which says at once what the question was taken to be) and the whole
answer (`final`); P50/P99, and turn 3 over turn 1.

Then the handover queue (bench/handover_queue.py), at two levels with the same arrivals: a
--share of the customers (evenly spread) says "I want to speak to a person" as their second turn,
and --agents signed-in console agents poll GET /console/queue.json every --poll seconds, take the
longest waiting one (POST …/take), hold it --handling seconds and hand it back. The first number
of --agents keeps up with the handovers, the second does not. The wait from the handover's `turn`
event to the agent's successful take (client side), and bill_assistant_handover_wait_seconds
(server side: its buckets' estimate, as histogram_quantile gives it, and its exact mean).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import random
import re
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import httpx
import msgspec

from app.reports.stats import percentile
from bench.chat_stream import _customers
from bench.common import demo_database, service
from bench.handover_queue import Level, add_agents, run_level

AS_OF = "2026-11-15"
TURNS = ("Why is my bill higher than last month?", "And why?", "When is it due?")
HANDOVER = "I want to speak to a person"
# What a follow-up was taken to be, said at once (prompts/locales/en/conversation.j2, `took`).
TOOK = re.compile(r"^About .*: $")


def _plan(prompt: str) -> str:
    """The plan a truthful model writes: the claim the prompt's START WITH names, from its FACTS (the
    last FACTS block: the examples come first)."""
    from bench.fakes.plans import plan

    facts = prompt.rsplit("FACTS\n", 1)[-1]
    start = (re.search(r"^START WITH: (.+)$", facts, re.M) or ["", ""])[1]
    if start.startswith("change"):
        change = re.search(r"^change: (up|down|same)", facts, re.M)
        claims = [{"claim": "change", "direction": change[1] if change else "same"}]
        if driver := re.search(r"^driver 1: .*, (up|down)$", facts, re.M):
            claims.append({"claim": "driver", "n": 1, "direction": driver[1]})
        return plan(*claims)
    if named := re.match(r"transaction (\d+)", start):
        return plan({"claim": "transaction", "n": int(named[1])})
    if start.startswith("transaction"):
        return plan({"claim": "no_answer"})
    if start == "fees_interest":
        return plan({"claim": "fees_interest"})
    status = re.search(r"^payment status: (\w+)$", facts, re.M)
    return plan({"claim": "payment_status", "status": status[1] if status else "unpaid"})


def _engine(conn: Connection, prefill_s: float, token_s: float) -> None:
    """The fake SGLang server at a model's pace, in this (child) process until the parent hangs up."""
    from bench.fakes.sglang_server import RunningFake, Script

    running = RunningFake()
    running.fake.answer_for = lambda prompt: Script(text=_plan(prompt), hang_s=prefill_s, token_delay_s=token_s)
    running.fake.cached_tokens = lambda prompt: 0  # type: ignore[method-assign]  # quadratic; not needed
    conn.send(running.url)
    with contextlib.suppress(EOFError):
        conn.recv()
    running.stop()


@contextlib.contextmanager
def paced_engine(prefill_s: float, token_s: float) -> Iterator[dict[str, str]]:
    """The paced fake engine for as long as the block; the environment that points the service at it."""
    here, there = multiprocessing.get_context("spawn").Pipe()
    process = multiprocessing.get_context("spawn").Process(target=_engine, args=(there, prefill_s, token_s))
    process.start()
    try:
        url = here.recv()
        yield {"ENGINE": "sglang", "SGLANG_URL": url, "ANSWER_CACHE_FILL": "0", "BATCH_WORKER": "0"}
    finally:
        here.close()
        process.join(10)


@dataclass
class Turn:
    status: int = 0  # the HTTP status
    first_words_ms: float | None = None  # to the first delta with text
    answer_ms: float | None = None  # to the first delta that answers (not "About …: ", said before the engine)
    whole_ms: float | None = None  # to the final event
    source: str = ""
    handover: str | None = None
    conversation_id: str | None = None
    turn_status: str = ""  # the turn event's: bot, waiting, agent
    at: float = 0.0  # perf_counter when the turn event came: a handover's start, client side


async def ask(client: httpx.AsyncClient, token: str, ref: str, question: str, cid: str | None) -> Turn:
    """One turn of a conversation, timed from sending it."""
    body: dict[str, object] = {"account_ref": ref, "question": question, "as_of": AS_OF, "locale": "en"}
    if cid:
        body["conversation_id"] = cid
    turn, event = Turn(), ""
    started = time.perf_counter()
    async with client.stream("POST", "/v1/chat", json=body, headers={"Authorization": f"Bearer {token}"}) as reply:
        turn.status = reply.status_code
        if reply.status_code != 200:
            await reply.aread()
            return turn
        async for line in reply.aiter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data = msgspec.json.decode(line[5:].strip())
                ms = (time.perf_counter() - started) * 1000
                if event == "conversation":
                    turn.conversation_id = data["conversation_id"]
                elif event == "delta" and data.get("text"):
                    turn.first_words_ms = turn.first_words_ms or ms
                    if turn.answer_ms is None and not TOOK.match(data["text"]):
                        turn.answer_ms = ms
                elif event == "final":
                    turn.whole_ms, turn.source, turn.handover = ms, data.get("source", ""), data.get("handover")
                elif event == "turn":
                    turn.turn_status, turn.at = data.get("status", ""), time.perf_counter()
    return turn


async def session(client: httpx.AsyncClient, key: str, customer: str) -> str:
    reply = await client.post(
        "/v1/sessions", json={"customer_ref": customer}, headers={"Authorization": f"Bearer {key}"}
    )
    reply.raise_for_status()
    return str(reply.json()["token"])


@dataclass
class Load:
    """What the simulated customers need: the service, the bank's key, its accounts and their owners."""

    base_url: str
    key: str
    accounts: list[tuple[str, str]]  # (account ref, customer ref)
    think_s: float
    seed: int
    turns: list[list[Turn]] = field(default_factory=list)  # per conversation, its turns


async def open_loop(
    load: Load,
    rate: float,
    duration_s: float,
    talk: Callable[[httpx.AsyncClient, int, random.Random], Coroutine[Any, Any, None]],
) -> None:
    """Start a conversation at Poisson arrivals, whether or not earlier ones are done; wait for all."""
    rng = random.Random(load.seed)
    limits = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
    async with httpx.AsyncClient(base_url=load.base_url, timeout=120, limits=limits) as client:
        tasks: list[asyncio.Task[None]] = []
        start, at, i = time.perf_counter(), 0.0, 0
        while at < duration_s:
            await asyncio.sleep(max(0.0, start + at - time.perf_counter()))
            tasks.append(asyncio.create_task(talk(client, i, random.Random(rng.random()))))
            i, at = i + 1, at + rng.expovariate(rate)
        await asyncio.gather(*tasks)


async def three_turns(
    load: Load, client: httpx.AsyncClient, i: int, rng: random.Random, questions: tuple[str, ...]
) -> None:
    """One customer's conversation; stops at a turn that fails or hands over."""
    ref, customer = load.accounts[i % len(load.accounts)]
    token, cid, turns = await session(client, load.key, customer), None, list[Turn]()
    load.turns.append(turns)
    for n, question in enumerate(questions):
        if n:
            await asyncio.sleep(load.think_s * rng.uniform(0.5, 1.5))
        turn = await ask(client, token, ref, question, cid)
        turns.append(turn)
        cid = turn.conversation_id
        if turn.status != 200 or turn.turn_status != "bot":
            return


def _p(values: list[float], q: float) -> float:
    return percentile(values, q) if values else float("nan")


def _report_turns(load: Load, rate: float) -> None:
    convs = load.turns
    print(
        f"\nthree-turn conversations: {len(convs)} at {rate:g}/s, {sum(len(c) for c in convs)} turns; ms from sending"
    )
    measures = ("first words", "answer words", "whole answer")
    print(f"{'turn':<26} {'n':>4} {'model':>6}" + "".join(f" {m + ' P50':>17} {'P99':>6}" for m in measures))
    rows: list[list[list[float]]] = []
    for n, question in enumerate(TURNS):
        done = [c[n] for c in convs if len(c) > n and c[n].whole_ms is not None]
        row = [
            [v for t in done if (v := getattr(t, a)) is not None] for a in ("first_words_ms", "answer_ms", "whole_ms")
        ]
        rows.append(row)
        model = sum(t.source == "model" for t in done)
        cells = "".join(f" {_p(v, 50):>17.0f} {_p(v, 99):>6.0f}" for v in row)
        print(f"{f'{n + 1}: {question[:22]}':<26} {len(done):>4} {model:>6}{cells}")
    failed = [t.status for c in convs for t in c if t.status != 200]
    if failed:
        print(f"failed turns (HTTP status): {sorted(failed)}")
    ratios = [
        f"{m} P50 {_p(b, 50) / _p(a, 50):.2f}x, P99 {_p(b, 99) / _p(a, 99):.2f}x"
        for m, a, b in zip(measures, rows[0], rows[2], strict=True)
    ]
    print("turn 3 / turn 1: " + "; ".join(ratios))


def _report_levels(levels: list[Level], rate: float, share: float, handling_s: float, duration_s: float) -> None:
    print(f"\nhandover queue: conversations at {rate:g}/s, {share:.0%} ask for a person as their second turn,")
    print(f"each agent holds a taken one {handling_s:g} s (one agent serves {1 / handling_s:.2f}/s)")
    print(
        f"{'agents':>6} {'handed':>7} {'load':>6} {'taken':>6} {'lost':>5}"
        f" {'client P50 s':>13} {'client P99 s':>13} {'server P50 s':>13} {'server P99 s':>13} {'server mean':>12}"
    )
    for lv in levels:
        load = lv.handed / duration_s * handling_s / lv.agents  # of the agents, by the handovers made
        c50, c99 = (percentile(lv.waits_s, q) if lv.waits_s else float("nan") for q in (50, 99))
        print(
            f"{lv.agents:>6} {lv.handed:>7} {load:>6.0%} {len(lv.waits_s):>6} {lv.lost_takes:>5}"
            f" {c50:>13.2f} {c99:>13.2f} {lv.server_p50:>13.2f} {lv.server_p99:>13.2f} {lv.server_mean:>12.2f}"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=1.0, help="conversations started a second")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of arrivals per phase")
    parser.add_argument("--think", type=float, default=1.0, help="seconds between turns (±50%%)")
    parser.add_argument("--prefill-ms", type=float, default=50.0, help="the fake engine's time to the first token")
    parser.add_argument("--token-ms", type=float, default=20.0, help="the fake engine's time per token")
    parser.add_argument("--share", type=float, default=0.5, help="share of customers asking for a person")
    parser.add_argument("--handling", type=float, default=3.0, help="seconds an agent holds a conversation")
    parser.add_argument("--agents", default="3,1", help="agents at the two levels: keeping up, then not")
    parser.add_argument("--poll", type=float, default=0.5, help="seconds between an idle agent's queue reads")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    agents = [int(n) for n in args.agents.split(",")]

    with demo_database() as (url, key, refs), paced_engine(args.prefill_ms / 1000, args.token_ms / 1000) as env:
        owners = asyncio.run(_customers(url, refs))
        slug, usernames = asyncio.run(add_agents(url, max(agents)))
        with service(url, {**env, "LOG_LEVEL": "WARNING", "COOKIE_SECURE": "0"}) as port:  # plain HTTP
            base = f"http://127.0.0.1:{port}"
            accounts = [(ref, owners[ref]) for ref in refs]
            warm = Load(base, key, accounts[-4:], 0.0, args.seed)
            asyncio.run(open_loop(warm, 4.0, 1.0, lambda c, i, r: three_turns(warm, c, i, r, TURNS)))
            load = Load(base, key, accounts, args.think, args.seed)
            asyncio.run(open_loop(load, args.rate, args.duration, lambda c, i, r: three_turns(load, c, i, r, TURNS)))
            levels = []
            for n in agents:
                level = Load(base, key, accounts, args.think, args.seed)  # the same arrivals at each level

                async def talk(c: httpx.AsyncClient, i: int, r: random.Random, lv: Load = level) -> None:
                    asks = int((i + 1) * args.share) > int(i * args.share)  # evenly spread: the share exactly
                    await three_turns(lv, c, i, r, (TURNS[0], HANDOVER) if asks else TURNS)

                run = open_loop(level, args.rate, args.duration, talk)
                levels.append(
                    asyncio.run(run_level(base, slug, usernames[:n], run, level.turns, args.handling, args.poll))
                )
    print(
        f"POST /v1/chat through the whole service (one worker), fake SGLang at {args.prefill_ms:g} ms to the first"
        f" token + {args.token_ms:g} ms a token, open loop, {args.duration:g} s of arrivals per phase,"
        f" think time {args.think:g} s ±50%, seed {args.seed}"
    )
    _report_turns(load, args.rate)
    _report_levels(levels, args.rate, args.share, args.handling, args.duration)
