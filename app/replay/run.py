"""Open-loop replay of a traffic file against a running service.

Each request is sent at its recorded time (or scaled by `speed`) whether or not earlier ones have
answered, and latency is measured from that scheduled time: a slow server cannot slow the arrivals
down and hide its queue (no coordinated omission). Time to first token: for the widget, when the
first text event reached the client (what the customer sees, queue included, from the scheduled
time); for the JSON API, which answers in one piece, the server's own `ttft` from Server-Timing.
Widget arrivals use a session token per customer, asked for before the clock starts, as a bank's
backend would when the page loads.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

import msgspec

from app.domain.vocabulary import Channel
from app.replay.http import Pool, post
from app.replay.traffic import Arrival


class Sample(msgspec.Struct, frozen=True, kw_only=True):
    tenant: str
    channel: Channel
    status: int  # 0: no HTTP answer (connection error)
    e2e_ms: float
    ttft_ms: float | None
    source: str | None
    seq: int = -1  # the arrival's place in the traffic file: the same request in two runs
    answer: dict[str, Any] | None = None  # the answer as served (the JSON body; the chat's final event)


def _final_answer(stream: bytes) -> dict[str, Any] | None:
    """The answer of a chat stream's final event (the answer as audited)."""
    for block in stream.replace(b"\r\n", b"\n").split(b"\n\n"):
        if block.startswith(b"event: final\n"):
            data = block.split(b"\n", 1)[1].removeprefix(b"data: ")
            answer: dict[str, Any] = msgspec.json.decode(data)
            return answer
    return None


async def _session_tokens(
    pool: Pool, host: str, port: int, arrivals: Sequence[Arrival], keys: dict[str, str]
) -> dict[tuple[str, str], str]:
    tokens: dict[tuple[str, str], str] = {}
    for arrival in arrivals:
        who = (arrival.tenant, arrival.customer_ref)
        if arrival.channel == "widget" and who not in tokens:
            body = msgspec.json.encode({"customer_ref": arrival.customer_ref})
            reply = await pool.request(
                post(host, port, "/v1/sessions", body, {"Authorization": f"Bearer {keys[arrival.tenant]}"})
            )
            if reply.status != 201:
                raise RuntimeError(f"no session for {who}: HTTP {reply.status} {reply.body[:200]!r}")
            tokens[who] = str(msgspec.json.decode(reply.body)["token"])
    return tokens


def _ttft(server_timing: str) -> float | None:
    for part in server_timing.split(","):
        name, _, duration = part.strip().partition(";dur=")
        if name == "ttft":
            return float(duration)
    return None


async def replay(
    arrivals: Sequence[Arrival],
    target: str,
    keys: dict[str, str],
    *,
    speed: float = 1.0,
    on_done: Callable[[Sample], None] = lambda sample: None,
) -> list[Sample]:
    url = urlsplit(target)
    host, port = url.hostname or "127.0.0.1", url.port or 80
    pool = Pool(host, port)
    samples: list[Sample] = []
    tokens = await _session_tokens(pool, host, port, arrivals, keys)

    async def one(seq: int, arrival: Arrival, scheduled: float) -> None:
        question = {"account_ref": arrival.account_ref, "question": arrival.question, "locale": arrival.locale}
        if arrival.as_of is not None:
            question["as_of"] = arrival.as_of.isoformat()
        widget = arrival.channel == "widget"
        if widget:
            token = tokens[(arrival.tenant, arrival.customer_ref)]
            raw = post(host, port, "/v1/chat", msgspec.json.encode(question), {"Authorization": f"Bearer {token}"})
        else:
            body = msgspec.json.encode({**question, "channel": arrival.channel})
            raw = post(host, port, "/v1/explanations", body, {"Authorization": f"Bearer {keys[arrival.tenant]}"})
        first_text: float | None = None

        def on_chunk(chunk: bytes) -> None:
            nonlocal first_text
            if first_text is None and b"event: delta" in chunk:
                first_text = time.perf_counter()

        status, ttft, answer = 0, None, None
        try:
            reply = await pool.request(raw, on_chunk)
            status = reply.status
            if widget:
                ttft = (first_text - scheduled) * 1000 if first_text is not None else None
                answer = _final_answer(reply.body) if status == 200 else None
            else:
                ttft = _ttft(reply.headers.get("server-timing", ""))
                answer = msgspec.json.decode(reply.body) if status == 200 else None
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass
        sample = Sample(
            tenant=arrival.tenant,
            channel=arrival.channel,
            status=status,
            e2e_ms=(time.perf_counter() - scheduled) * 1000,
            ttft_ms=ttft,
            source=None if answer is None else str(answer.get("source")),
            seq=seq,
            answer=answer,
        )
        samples.append(sample)
        on_done(sample)

    start = time.perf_counter()
    tasks = []
    for seq, arrival in enumerate(arrivals):
        scheduled = start + arrival.at / speed
        if (delay := scheduled - time.perf_counter()) > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(seq, arrival, scheduled)))  # never waits for earlier answers
    await asyncio.gather(*tasks)
    pool.close()
    return samples
