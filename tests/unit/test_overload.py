"""The overload guard's parts: the event-loop lag monitor (a fake clock, then a really blocked loop),
the in-flight limit, and the middleware shedding on lag through a small app."""

from __future__ import annotations

import asyncio
import time

from litestar import Litestar, get
from litestar.testing import AsyncTestClient

from app.api.overload import LagMonitor, Limiter, OverloadMiddleware
from tests.metrics import sample

SHED_BODY = {
    "status": 503,
    "error": "overloaded",
    "message": "the service is at capacity; retry after 1 s",
    "retry_after_s": 1,
}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_monitor_reports_how_late_the_sleep_woke_and_a_pending_one_already_late() -> None:
    clock = Clock()
    monitor = LagMonitor(interval_s=0.125, clock=clock)
    monitor.sleeping()  # due at 0.125
    clock.now = 0.0625
    assert monitor.lag_s() == 0.0
    clock.now = 0.5  # the loop was blocked: the pending sleep is late before it has woken
    assert monitor.lag_s() == 0.375
    monitor.woke()
    assert monitor.last_s == 0.375
    monitor.sleeping()  # due at 0.625; the last measurement still counts until the next one
    assert monitor.lag_s() == 0.375
    clock.now = 0.625
    monitor.woke()  # on time
    assert monitor.lag_s() == 0.0


def test_the_limiter_caps_in_flight_and_refuses_on_lag() -> None:
    clock = Clock()
    monitor = LagMonitor(interval_s=0.125, clock=clock)
    limiter = Limiter(max_in_flight=2, max_lag_s=0.25, monitor=monitor)
    assert [limiter.enter(), limiter.enter(), limiter.enter()] == [None, None, "in_flight"]
    assert limiter.in_flight == 2
    limiter.leave()
    assert limiter.enter() is None
    limiter.leave()
    limiter.leave()
    monitor.sleeping()
    clock.now = 0.5  # 0.375 late > 0.25
    assert limiter.enter() == "loop_lag"
    assert limiter.in_flight == 0
    clock.now = 0.375  # 0.25 late: not above the threshold
    assert limiter.enter() is None


def test_each_level_fills_only_its_share_so_lower_levels_are_refused_first() -> None:
    limiter = Limiter(max_in_flight=8, max_lag_s=0, monitor=LagMonitor())
    admitted: list[int] = []
    for level in (0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 3):  # a flood of each level in turn, lowest first
        if limiter.enter() is not None:
            continue
        if limiter.over_share(level) is None:
            admitted.append(level)
        else:
            limiter.leave()  # refused by the route: the middleware's `finally` gives the place back
    # Batch stops at half the places (4), api at 6, console at 8 of 8 (ceil 7.2); widget finds none left
    # only because live requests themselves filled the process.
    assert admitted == [0, 0, 0, 0, 1, 1, 2, 2]
    assert limiter.in_flight == 8
    assert limiter.enter() == "in_flight"


def test_the_lag_refuses_batch_before_live() -> None:
    clock = Clock()
    monitor = LagMonitor(interval_s=0.125, clock=clock)
    limiter = Limiter(max_in_flight=8, max_lag_s=0.2, monitor=monitor)
    monitor.sleeping()
    clock.now = 0.125 + 0.12  # 120 ms late: over batch's threshold (half of 200 ms), under api's (150 ms)
    assert limiter.enter() is None  # the top level's (200 ms) is not reached
    assert limiter.over_share(0) == "loop_lag"
    assert limiter.over_share(1) is None
    assert limiter.over_share(3) is None
    clock.now = 0.125 + 0.17
    assert limiter.over_share(1) == "loop_lag"
    assert limiter.over_share(2) is None  # console's threshold: 180 ms
    assert limiter.over_share(3) is None


def test_lag_zero_turns_the_lag_check_off() -> None:
    clock = Clock()
    monitor = LagMonitor(interval_s=0.125, clock=clock)
    monitor.sleeping()
    clock.now = 10.0
    assert Limiter(max_in_flight=1, max_lag_s=0, monitor=monitor).enter() is None


async def test_a_blocked_loop_sheds_the_next_request_then_recovers() -> None:
    limiter = Limiter(max_in_flight=64, max_lag_s=0.1, monitor=LagMonitor(interval_s=0.05))
    async with limiter.lifespan(None):
        await asyncio.sleep(0.12)
        assert limiter.enter() is None
        limiter.leave()
        time.sleep(0.3)  # noqa: ASYNC251 -- blocks the loop on purpose: the monitor's sleep is now ~0.25 s late
        assert limiter.enter() == "loop_lag"
        await asyncio.sleep(0.01)  # the monitor wakes and records the lag: still refused
        assert limiter.monitor.last_s > 0.2
        assert limiter.enter() == "loop_lag"
        await asyncio.sleep(0.2)  # a few on-time wake-ups later
        assert limiter.enter() is None
        limiter.leave()


@get("/block", sync_to_thread=False)
def block() -> dict[str, str]:
    time.sleep(0.3)  # a handler that holds the event loop
    return {"status": "blocked"}


@get("/fast", sync_to_thread=False)
def fast() -> dict[str, str]:
    return {"status": "ok"}


@get("/health", sync_to_thread=False)
def health() -> dict[str, str]:
    return {"status": "ok"}


async def test_the_middleware_answers_503_with_retry_after_while_the_loop_lags() -> None:
    limiter = Limiter(max_in_flight=64, max_lag_s=0.1, monitor=LagMonitor(interval_s=0.05))
    app = Litestar([block, fast, health], middleware=[OverloadMiddleware(limiter)], lifespan=[limiter.lifespan])
    before = sample("bill_assistant_http_shed_total", {"reason": "loop_lag", "level": "any"})
    async with AsyncTestClient(app) as client:
        await asyncio.sleep(0.12)
        assert (await client.get("/fast")).status_code == 200
        assert (await client.get("/block")).status_code == 200
        shed = await client.get("/fast")
        assert shed.status_code == 503
        assert shed.json() == SHED_BODY
        assert shed.headers["retry-after"] == "1"
        assert shed.headers["content-type"] == "application/json"
        assert (await client.get("/health")).status_code == 200  # probes are never refused
        await asyncio.sleep(0.25)
        assert (await client.get("/fast")).status_code == 200
    assert sample("bill_assistant_http_shed_total", {"reason": "loop_lag", "level": "any"}) - before == 1
    assert limiter.in_flight == 0
