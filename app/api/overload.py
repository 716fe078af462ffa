"""Overload protection for every path: a bounded amount of work per process, the excess refused at once.

The engine path has its own admission scheduler (app/inference/scheduler.py), but the deterministic
path (ENGINE=off) and the answer-cache path never reach it: at twice the process's capacity nothing
was refused, and the queue grew where no code looked (clients waited 11 s at P50 while the server's
own timings said 18 ms). This middleware sits in front of every route and refuses a request with
503 `{"status":503,"error":"overloaded","message":...,"retry_after_s":1}` and `Retry-After: 1`,
written directly, before any authentication or database work, when either

- **in flight**: `MAX_IN_FLIGHT` requests are already being handled by this process. This bounds
  the memory held by requests and the pressure on the database pool (DB_POOL_SIZE + overflow
  connections; the rest wait for one). But it only counts requests that have reached the app:
  requests whose bytes sit in a socket, or whose tasks wait in the event loop's ready queue behind
  the running ones, are not counted, and that is where the queue sat.
- **event-loop lag**: the loop wakes a sleep more than `MAX_LOOP_LAG_MS` late. A small task sleeps
  `LAG_INTERVAL_S` (50 ms) at a time and measures how late it woke; a request is refused while the
  last measurement, or the lateness of the sleep now pending (so a loop stalled right now counts
  before the monitor gets to run), is above the threshold. Lag is the one cheap signal of the
  queue an in-flight counter cannot see: every callback in the ready queue delays the timer.

Both: the cap alone lets the loop queue grow without limit on a CPU-bound process (each request is
fast, so few are "in flight", yet thousands wait to be read), and lag alone lets slow I/O-bound
requests (a stalled database, a hanging engine) pile up without limit in memory and in the pool.

Both limits hold per priority level (app/domain/priority.py), lower levels refused first: a level
may fill only its share of MAX_IN_FLIGHT and of MAX_LOOP_LAG_MS (LEVEL_SHARE). Before the route has
authenticated the request its level is unknown, so the middleware applies the highest level's
limits; the route then calls `classify` with the tenant's class and the channel, and the request is
refused there if its own level is over its share. So a flood of batch work fills at most half the
process, and widget, console and api requests still find room; live traffic alone still sheds at
the full cap. (Before: a batch flood queued in the scheduler held every in-flight place, and the
next live request was refused.)

/health, /ready and /metrics are never refused: probes and scrapes must answer under load.

Refusals are counted in `bill_assistant_http_shed_total{reason="in_flight"|"loop_lag", level}`
(level "any" before the route knew it); the
requests being handled in `bill_assistant_http_in_flight`, the last lag in
`bill_assistant_event_loop_lag_seconds`. Registered inside the request log, so a refused request
is logged with status 503.

What the app cannot see: connections waiting in the listen socket's backlog (uvicorn `--backlog`,
default 2048) before uvicorn accepts them. uvloop accepts and reads eagerly, so under overload that
queue stays short and the lag shows the rest. uvicorn's own `limit_concurrency` is not used: it
answers a plain-text 503 without our JSON or Retry-After, and it counts open keep-alive connections
as well as requests, so a client pool holding idle connections would be refused while the process
is idle.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import msgspec
from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Receive, Scope, Send

from app.domain.priority import LEVELS, effective_level
from app.domain.vocabulary import Channel, PriorityClass
from app.errors import Shed
from app.metrics import HTTP_IN_FLIGHT, HTTP_SHED_BY, LOOP_LAG

EXEMPT = frozenset({"/health", "/ready", "/metrics"})
# A conversation's live feed waits, mostly asleep, for as long as a page is open: not work in flight.
FEED_SUFFIX = "/events"
LAG_INTERVAL_S = 0.05
RETRY_AFTER_S = 1
# The share of MAX_IN_FLIGHT and MAX_LOOP_LAG_MS up to which a level is admitted (level 3: widget).
LEVEL_SHARE = {3: 1.0, 2: 0.9, 1: 0.75, 0: 0.5}
TOP = LEVELS[0]
MESSAGE = f"the service is at capacity; retry after {RETRY_AFTER_S} s"

_BODY = msgspec.json.encode({"status": 503, "error": "overloaded", "message": MESSAGE, "retry_after_s": RETRY_AFTER_S})
_HEADERS = (
    (b"content-type", b"application/json"),
    (b"content-length", str(len(_BODY)).encode()),
    (b"retry-after", str(RETRY_AFTER_S).encode()),
)


class LagMonitor:
    """How late the event loop wakes a sleep of `interval_s`: the last measurement, or the lateness
    of the sleep now pending where that is already larger."""

    def __init__(self, interval_s: float = LAG_INTERVAL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval_s = interval_s
        self.clock = clock
        self.last_s = 0.0
        self.due: float | None = None  # when the pending sleep should end

    def lag_s(self) -> float:
        if self.due is None:
            return self.last_s
        return max(self.last_s, self.clock() - self.due)

    def sleeping(self) -> None:
        self.due = self.clock() + self.interval_s

    def woke(self) -> None:
        if self.due is not None:
            self.last_s = max(0.0, self.clock() - self.due)
            self.due = None
            LOOP_LAG.set(self.last_s)

    async def run(self) -> None:
        while True:
            self.sleeping()
            await asyncio.sleep(self.interval_s)
            self.woke()


class Limiter:
    """The admission decision, one per process: at most `max_in_flight` requests at once, none
    while the loop lags more than `max_lag_s` (0: the lag is not checked); a level below the top
    only up to its LEVEL_SHARE of both."""

    def __init__(self, *, max_in_flight: int, max_lag_s: float, monitor: LagMonitor) -> None:
        self.max_in_flight = max_in_flight
        self.max_lag_s = max_lag_s
        self.monitor = monitor
        self.in_flight = 0

    def enter(self) -> str | None:
        """A request arrives, its level not yet known. None: admitted (call leave() when done);
        otherwise why it is refused."""
        if self.in_flight >= self.max_in_flight:
            return "in_flight"
        if self._lagging(TOP):
            return "loop_lag"
        self.in_flight += 1
        return None

    def over_share(self, level: int) -> str | None:
        """An admitted request turns out to be of `level`: None if the process is within that
        level's share (this request counted), otherwise why it is refused."""
        if self.in_flight > math.ceil(self.max_in_flight * LEVEL_SHARE[level]):
            return "in_flight"
        if self._lagging(level):
            return "loop_lag"
        return None

    def _lagging(self, level: int) -> bool:
        return bool(self.max_lag_s) and self.monitor.lag_s() > self.max_lag_s * LEVEL_SHARE[level]

    def leave(self) -> None:
        self.in_flight -= 1

    @asynccontextmanager
    async def lifespan(self, _: Any) -> AsyncIterator[None]:
        """Runs the lag monitor for as long as the app."""
        task = asyncio.create_task(self.monitor.run(), name="loop-lag-monitor")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


class OverloadMiddleware(ASGIMiddleware):
    scopes = (ScopeType.HTTP,)

    def __init__(self, limiter: Limiter) -> None:
        self.limiter = limiter

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        if scope["path"] in EXEMPT or scope["path"].endswith(FEED_SUFFIX):
            await next_app(scope, receive, send)
            return
        limiter = self.limiter
        refused = limiter.enter()
        if refused is not None:
            HTTP_SHED_BY(refused, "any").inc()
            # A new message each time: the request log adds its header to the one it is given.
            await send({"type": "http.response.start", "status": 503, "headers": list(_HEADERS)})
            await send({"type": "http.response.body", "body": _BODY, "more_body": False})
            return
        scope.setdefault("state", {})["limiter"] = limiter  # for `classify`
        HTTP_IN_FLIGHT.inc()
        try:
            await next_app(scope, receive, send)
        finally:
            limiter.leave()
            HTTP_IN_FLIGHT.dec()


def classify(scope: Scope, priority_class: PriorityClass, channel: Channel) -> None:
    """The route knows who asks and through which channel: the channel goes to the request log and
    the metrics, and the request is refused (503 `overloaded`, Retry-After) if its level is over its
    share of the process."""
    state = scope.setdefault("state", {})
    state["channel"] = channel
    limiter: Limiter | None = state.get("limiter")
    if limiter is None:  # the route was called without the guard in front (in-process tests)
        return
    level = effective_level(priority_class, channel)
    refused = limiter.over_share(level)
    if refused is not None:
        HTTP_SHED_BY(refused, str(level)).inc()
        raise Shed(503, "overloaded", RETRY_AFTER_S, MESSAGE)
