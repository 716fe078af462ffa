"""A small open-loop HTTP/1.1 load generator.

Requests are sent at their scheduled times (Poisson arrivals) whether or not earlier ones have
answered, and latency is measured from the scheduled time, so a slow server cannot hide its queue
(no coordinated omission). Keep-alive connections are reused; a new one opens when all are busy.
The client is a few lines of asyncio rather than a general HTTP library so that, on a 2-core
machine, it takes as little CPU as possible away from the server it measures.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Result:
    latencies_ms: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    elapsed_s: float = 0.0

    def percentile(self, q: float) -> float:
        """Nearest-rank percentile (q in 0..100)."""
        if not self.latencies_ms:
            return float("nan")
        ordered = sorted(self.latencies_ms)
        rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
        return ordered[rank - 1]

    @property
    def throughput(self) -> float:
        return len(self.latencies_ms) / self.elapsed_s if self.elapsed_s else 0.0


class _Pool:
    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def request(self, raw: bytes) -> int:
        if self.idle:
            try:
                return await self._send(*self.idle.pop(), raw)
            except (OSError, asyncio.IncompleteReadError):
                pass  # the server closed an idle keep-alive connection: retry once on a new one
        return await self._send(*await asyncio.open_connection(self.host, self.port), raw)

    async def _send(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: bytes) -> int:
        writer.write(raw)
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        for line in head.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        await reader.readexactly(length)
        self.idle.append((reader, writer))
        return status

    def close(self) -> None:
        for _, writer in self.idle:
            writer.close()


def post(host: str, port: int, path: str, body: bytes, headers: dict[str, str]) -> bytes:
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", "Content-Type: application/json",
             f"Content-Length: {len(body)}", *(f"{k}: {v}" for k, v in headers.items())]  # fmt: skip
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def open_loop(
    host: str, port: int, rate: float, duration_s: float, make_request: Callable[[int], bytes], seed: int = 1
) -> Result:
    """Send Poisson arrivals at `rate` per second for `duration_s`; wait for all answers."""
    rng = random.Random(seed)
    pool = _Pool(host, port)
    result = Result()
    tasks: list[asyncio.Task[None]] = []

    async def one(i: int, scheduled: float) -> None:
        try:
            status = await pool.request(make_request(i))
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            key = type(exc).__name__
        else:
            if status == 200:
                result.latencies_ms.append((time.perf_counter() - scheduled) * 1000)
                return
            key = str(status)
        result.errors[key] = result.errors.get(key, 0) + 1

    start = time.perf_counter()
    at = 0.0
    i = 0
    while at < duration_s:
        delay = start + at - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(i, start + at)))
        i += 1
        at += rng.expovariate(rate)
    await asyncio.gather(*tasks)
    result.elapsed_s = time.perf_counter() - start
    pool.close()
    return result
