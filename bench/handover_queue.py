"""The handover queue under load (bench/conversations.py): console agents signed in over HTTP, as a
browser is, polling the bank's queue, taking the longest waiting conversation, holding it and handing
it back; the wait from handover to take, client side and from bill_assistant_handover_wait_seconds."""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Protocol

import httpx
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text

from app import demo
from app.data.agents import create_agent
from app.data.database import create_engine
from app.data.tenants import set_limits

AGENT_PASSWORD = "bench agents wait in line"
HISTOGRAM = "bill_assistant_handover_wait_seconds"
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


class CustomerTurn(Protocol):
    """A customer's turn as bench/conversations.py records it (read here, never imported: no cycle)."""

    conversation_id: str | None
    turn_status: str  # the turn event's: bot, waiting, agent
    at: float  # perf_counter when the turn event came


@dataclass
class Level:
    agents: int
    handed: int  # conversations handed over
    waits_s: list[float]  # client side: the handover's turn event to the agent's successful take
    lost_takes: int  # 409s: another agent took it first
    server_p50: float
    server_p99: float
    server_mean: float


async def add_agents(url: str, n: int) -> tuple[str, list[str]]:
    """n console agents for the demo bank, and no concurrency cap to measure instead of the queue."""
    slug = demo.TENANTS[0].slug
    engine = create_engine(url)
    async with engine.begin() as conn:
        tenant_id = (await conn.execute(text("SELECT id FROM tenants WHERE slug = :s"), {"s": slug})).scalar_one()
        await set_limits(conn, slug, {"max_concurrency": 1000})
        names = [f"bench{i}" for i in range(n)]
        for name in names:
            await create_agent(conn, tenant_id, name, f"Bench Agent {name}", AGENT_PASSWORD)
    await engine.dispose()
    return slug, names


def _csrf(page: httpx.Response) -> str:
    found = CSRF.search(page.text)
    if found is None:
        raise RuntimeError(f"no CSRF token on {page.url} ({page.status_code})")
    return found[1]


async def _sign_in(http: httpx.AsyncClient, slug: str, username: str) -> str:
    """Sign in as the console's form does; the session's CSRF token."""
    form = {"csrf_token": _csrf(await http.get("/console/login")), "tenant": slug, "username": username}
    reply = await http.post("/console/login", data={**form, "password": AGENT_PASSWORD})
    if reply.status_code != 303:
        raise RuntimeError(f"sign-in as {username}: {reply.status_code}")
    return _csrf(await http.get("/console"))


async def _histogram(http: httpx.AsyncClient) -> dict[float, float]:
    """The handover wait histogram's cumulative bucket counts (all tenants), by upper bound."""
    buckets: dict[float, float] = {}
    for family in text_string_to_metric_families((await http.get("/metrics")).text):
        if family.name == HISTOGRAM:
            for s in family.samples:
                if s.name.endswith("_bucket"):
                    le = float(s.labels["le"])
                    buckets[le] = buckets.get(le, 0.0) + s.value
                elif s.name.endswith("_sum") or s.name.endswith("_count"):
                    buckets[-1.0 if s.name.endswith("_sum") else -2.0] = s.value
    return buckets


def _quantile(q: float, buckets: dict[float, float]) -> float:
    """Prometheus's histogram_quantile: linear within the bucket the rank falls in."""
    bounds = sorted(b for b in buckets if b >= 0)
    total = buckets[math.inf] if bounds else 0.0
    if not total:
        return float("nan")
    rank, lower, below = q * total, 0.0, 0.0
    for le in bounds:
        if buckets[le] >= rank:
            if le == math.inf:
                return lower
            return lower + (le - lower) * (rank - below) / max(buckets[le] - below, 1e-9)
        lower, below = le, buckets[le]
    return lower


async def _agent(
    base: str, slug: str, username: str, taken: dict[str, float], done: asyncio.Event, handling_s: float, poll_s: float
) -> int:
    """One agent until the customers are done and the queue is empty; how many takes it lost."""
    lost = 0
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        csrf = await _sign_in(http, slug, username)
        while True:
            waiting = (await http.get("/console/queue.json")).json()["waiting"]
            if not waiting and done.is_set():
                return lost
            mine = None
            for row in waiting:  # the longest waiting first; another agent may take it first
                cid = row["id"]
                reply = await http.post(f"/console/conversations/{cid}/take", data={"csrf_token": csrf})
                if reply.status_code == 303:
                    taken[cid], mine = time.perf_counter(), cid
                    break
                lost += 1
            if mine is None:
                await asyncio.sleep(poll_s)
                continue
            await asyncio.sleep(handling_s)  # the agent talks with the customer
            reply = await http.post(f"/console/conversations/{mine}/release", data={"csrf_token": csrf})
            if reply.status_code != 303:
                raise RuntimeError(f"hand back: {reply.status_code}")


async def run_level(
    base: str,
    slug: str,
    usernames: list[str],
    customers: Awaitable[None],
    turns: Sequence[Sequence[CustomerTurn]],
    handling_s: float,
    poll_s: float,
) -> Level:
    """The customers' load (which hands some conversations over) beside the agents; the waits."""
    taken: dict[str, float] = {}
    done = asyncio.Event()
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        before = await _histogram(http)
        agents = [asyncio.create_task(_agent(base, slug, u, taken, done, handling_s, poll_s)) for u in usernames]
        await customers
        done.set()
        lost = sum(await asyncio.gather(*agents))
        after = await _histogram(http)
    diff = {le: after.get(le, 0.0) - before.get(le, 0.0) for le in after}
    handed = {t.conversation_id: t.at for c in turns for t in c if t.turn_status == "waiting" and t.conversation_id}
    waits = [taken[cid] - at for cid, at in handed.items() if cid in taken]
    count = diff.get(-2.0, 0.0)
    return Level(
        agents=len(usernames),
        handed=len(handed),
        waits_s=waits,
        lost_takes=lost,
        server_p50=_quantile(0.5, diff),
        server_p99=_quantile(0.99, diff),
        server_mean=diff.get(-1.0, 0.0) / count if count else float("nan"),
    )
