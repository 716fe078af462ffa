"""Admission scheduling with a fake engine of fixed service time: priority, fairness, caps, shedding,
cancellation. Decisions happen when slots free up, so the orders asserted here do not depend on timing."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import pytest

from app.domain.priority import TenantLimits
from app.errors import Shed
from app.inference.drain import CUT_OFF_GRACE_S
from app.inference.scheduler import Hooks, Scheduler
from tests.waiting import until

FAST = TenantLimits(weight=1, max_concurrency=100, rate_per_s=1e6)


class FakeEngine:
    """Holds each admitted request for a fixed service time and records who ran, in order."""

    def __init__(self, scheduler: Scheduler, service_s: float = 0.002) -> None:
        self.scheduler, self.service_s = scheduler, service_s
        self.order: list[tuple[str, int]] = []
        self.running: Counter[str] = Counter()
        self.max_running: Counter[str] = Counter()

    async def request(self, tenant: str, level: int = 1, limits: TenantLimits = FAST, deadline_s: float = 60) -> str:
        try:
            async with self.scheduler.admit(tenant, limits, level, deadline_s):
                self.order.append((tenant, level))
                self.running[tenant] += 1
                self.max_running[tenant] = max(self.max_running[tenant], self.running[tenant])
                try:
                    await asyncio.sleep(self.service_s)
                finally:
                    self.running[tenant] -= 1
            return "served"
        except Shed as shed:
            return f"shed:{shed.reason}"
        except asyncio.CancelledError:
            return "cancelled"


async def hold(scheduler: Scheduler) -> tuple[asyncio.Event, asyncio.Future[list[None]]]:
    """Occupy every slot until the returned event is set, so that what follows queues up."""
    release = asyncio.Event()

    async def run() -> None:
        async with scheduler.admit("holder", FAST, 3, 60):
            await release.wait()

    tasks = asyncio.gather(*(run() for _ in range(scheduler.capacity)))
    await until("every slot held", lambda: scheduler.in_flight == scheduler.capacity)
    return release, tasks


async def test_strict_priority_between_levels() -> None:
    scheduler = Scheduler(capacity=1)
    engine = FakeEngine(scheduler)
    release, holder = await hold(scheduler)
    batch = [asyncio.create_task(engine.request("jobs", level=0)) for _ in range(5)]
    await until("5 queued", lambda: scheduler.queued() == 5)
    widget = [asyncio.create_task(engine.request("bank", level=3)) for _ in range(5)]
    console = [asyncio.create_task(engine.request("bank", level=2)) for _ in range(3)]
    await until("13 queued", lambda: scheduler.queued() == 13)
    release.set()
    await asyncio.gather(holder, *batch, *widget, *console)
    assert [level for _, level in engine.order] == [3] * 5 + [2] * 3 + [0] * 5


@pytest.mark.parametrize(("weights", "sent"), [((1, 1), (300, 30)), ((1, 3), (300, 300)), ((2, 1), (40, 400))])
async def test_weighted_fair_sharing_within_a_level(weights: tuple[int, int], sent: tuple[int, int]) -> None:
    scheduler = Scheduler(capacity=4, service_time_s=0.001)  # the estimate matches the fake engine
    engine = FakeEngine(scheduler, service_s=0.001)
    limits = {
        name: TenantLimits(weight=w, max_concurrency=100, rate_per_s=1e6) for name, w in zip("ab", weights, strict=True)
    }
    release, holder = await hold(scheduler)  # everyone queues before the first decision
    tasks = [
        asyncio.create_task(engine.request(name, limits=limits[name]))
        for name, count in zip("ab", sent, strict=True)
        for _ in range(count)
    ]
    await until(f"{sum(sent)} queued", lambda: scheduler.queued() == sum(sent))
    release.set()
    await asyncio.gather(holder, *tasks)
    # While both tenants are backlogged, each gets its weight's share, whatever it sends.
    both_busy = min(sent[0] * sum(weights) // weights[0], sent[1] * sum(weights) // weights[1])
    window = [tenant for tenant, _ in engine.order[:both_busy]]
    share_a = window.count("a") / len(window)
    expected = weights[0] / sum(weights)
    assert abs(share_a - expected) <= 0.15 * expected, (share_a, expected, len(window))


async def test_per_tenant_concurrency_cap_holds() -> None:
    scheduler = Scheduler(capacity=8)
    engine = FakeEngine(scheduler, service_s=0.005)
    capped = TenantLimits(weight=1, max_concurrency=2, rate_per_s=1e6)
    tasks = [asyncio.create_task(engine.request("a", limits=capped)) for _ in range(20)]
    tasks += [asyncio.create_task(engine.request("b")) for _ in range(20)]
    results = await asyncio.gather(*tasks)
    assert results == ["served"] * 40
    assert engine.max_running["a"] == 2
    assert engine.max_running["b"] > 2  # the other tenant uses the free capacity


async def test_every_request_ends_as_exactly_one_outcome() -> None:
    counts: Counter[str] = Counter()
    hooks = Hooks(
        admitted=lambda *_: counts.update(["admitted"]),
        shed=lambda *_: counts.update(["shed"]),
        cancelled=lambda _tenant, _level, where: counts.update([f"cancelled_{where}"]),
    )
    scheduler = Scheduler(capacity=2, hooks=hooks)
    engine = FakeEngine(scheduler, service_s=0.004)
    rng = random.Random(5)
    limited = TenantLimits(weight=1, max_concurrency=2, rate_per_s=200)
    tasks = []
    for i in range(300):
        level = rng.choice([0, 1, 2, 3])
        tasks.append(
            asyncio.create_task(engine.request(f"t{i % 3}", level, limited, deadline_s=rng.choice([0.01, 0.05, 5])))
        )
        if i % 7 == 0:
            asyncio.get_running_loop().call_later(rng.random() * 0.05, tasks[-1].cancel)
        await asyncio.sleep(0.0005)
    outcomes = Counter(r.split(":")[0] for r in await asyncio.gather(*tasks, return_exceptions=False))
    assert set(outcomes) <= {"served", "shed", "cancelled"}
    assert min(outcomes["served"], outcomes["shed"], outcomes["cancelled"]) > 0
    assert (scheduler.in_flight, scheduler.queued()) == (0, 0)
    # The scheduler saw each request end its wait exactly once: admitted, shed, or gone while queued.
    assert counts["admitted"] + counts["shed"] + counts["cancelled_queued"] == 300
    assert counts["shed"] == outcomes["shed"]
    # Every cancellation is seen, queued or running; a request cancelled after it finished is served.
    assert counts["cancelled_queued"] + counts["cancelled_running"] == outcomes["cancelled"]
    assert counts["admitted"] - counts["cancelled_running"] == outcomes["served"]


async def test_a_disconnect_frees_its_slot_and_its_queue_place() -> None:
    scheduler = Scheduler(capacity=1)
    engine = FakeEngine(scheduler, service_s=10)
    running = asyncio.create_task(engine.request("a"))
    await until("1 running", lambda: scheduler.in_flight == 1)
    queued = asyncio.create_task(engine.request("b"))
    leaving = asyncio.create_task(engine.request("c"))
    await until("2 queued", lambda: scheduler.queued() == 2)
    leaving.cancel()  # gone while queued
    await until("1 queued", lambda: scheduler.queued() == 1)
    engine.service_s = 0.001
    running.cancel()  # gone while running: its slot goes to the next in line at once
    assert await running == "cancelled"
    assert await queued == "served"
    assert await leaving == "cancelled"
    assert [t for t, _ in engine.order] == ["a", "b"]
    assert scheduler.in_flight == 0


async def test_rate_limit_is_429_with_retry_after() -> None:
    scheduler = Scheduler(capacity=10)
    slow = TenantLimits(weight=1, max_concurrency=10, rate_per_s=2)
    async with scheduler.admit("a", slow, 1, 5), scheduler.admit("a", slow, 1, 5):
        with pytest.raises(Shed) as shed:
            async with scheduler.admit("a", slow, 1, 5):
                pass
    assert (shed.value.status, shed.value.reason) == (429, "rate_limited")
    assert shed.value.retry_after_s >= 1
    async with scheduler.admit("b", slow, 1, 5):  # another tenant has its own budget
        pass


async def test_overload_is_refused_at_once_and_a_passed_deadline_while_queued_too() -> None:
    scheduler = Scheduler(capacity=1, service_time_s=0.02)  # the engine is believed to be quick...
    release, holder = await hold(scheduler)  # ...but the slot stays taken
    waiting = asyncio.create_task(FakeEngine(scheduler).request("b", level=3, deadline_s=0.1))
    await until("1 queued", lambda: scheduler.queued() == 1)
    with pytest.raises(Shed) as shed:  # 0.04 s of work ahead, 0.01 s allowed: refused at once
        async with scheduler.admit("c", FAST, 3, 0.01):
            pass
    assert (shed.value.status, shed.value.reason) == (503, "overloaded")
    assert shed.value.retry_after_s >= 1
    assert await waiting == "shed:deadline"  # queued, and dropped when its deadline passed
    assert scheduler.queued() == 0
    release.set()
    await holder
    assert scheduler.in_flight == 0


async def test_shutdown_refuses_new_work_and_drains_what_runs() -> None:
    scheduler = Scheduler(capacity=1)
    release, holder = await hold(scheduler)
    queued = asyncio.create_task(FakeEngine(scheduler).request("b"))
    await until("1 queued", lambda: scheduler.queued() == 1)
    draining = asyncio.create_task(scheduler.shutdown(timeout_s=5))
    assert await queued == "shed:shutting_down"
    with pytest.raises(Shed, match="shutting down"):
        async with scheduler.admit("c", FAST, 3, 5):
            pass
    assert not draining.done()  # still waiting for the running request
    release.set()
    await holder
    await draining


async def test_batch_leaves_slots_free_for_people() -> None:
    scheduler = Scheduler(capacity=4, batch_share=0.75)
    engine = FakeEngine(scheduler, service_s=10)
    jobs = [asyncio.create_task(engine.request("jobs", level=0)) for _ in range(5)]
    await until("2 queued", lambda: scheduler.queued() == 2)
    assert scheduler.in_flight == 3  # the fourth slot stays free...
    person = asyncio.create_task(engine.request("bank", level=3))
    await until("4 running", lambda: scheduler.in_flight == 4)  # ...and a person gets it at once
    assert scheduler.queued() == 2
    for task in [*jobs, person]:
        task.cancel()
    await asyncio.gather(*jobs, person)


async def test_the_drain_deadline_calls_subscribers_once_and_late_ones_at_once() -> None:
    scheduler = Scheduler(capacity=1)
    calls: list[str] = []
    scheduler.drain.subscribe(lambda: calls.append("early"))
    unsubscribe = scheduler.drain.subscribe(lambda: calls.append("gone"))
    unsubscribe()
    scheduler.close(timeout_s=0.05)
    scheduler.close(timeout_s=60)  # a second close keeps the first deadline
    await asyncio.sleep(0.01)
    assert calls == []  # not before the deadline
    await until("the drain's cut-off", lambda: scheduler.drain.cut_off)
    assert calls == ["early"]
    scheduler.drain.subscribe(lambda: calls.append("late"))
    assert calls == ["early", "late"]


async def test_shutdown_gives_up_after_the_drain_deadline_and_the_grace() -> None:
    scheduler = Scheduler(capacity=1)
    release, holder = await hold(scheduler)  # never cut short: it does not subscribe
    started = asyncio.get_running_loop().time()
    with pytest.raises(TimeoutError):
        await scheduler.shutdown(timeout_s=0.1)
    waited = asyncio.get_running_loop().time() - started
    assert 0.1 + CUT_OFF_GRACE_S <= waited < 0.1 + CUT_OFF_GRACE_S + 0.5
    release.set()
    await holder
