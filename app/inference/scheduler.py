"""Admission in front of the engine: who runs, who waits, who is refused.

- A global in-flight cap sized to the engine's capacity; batch work leaves a quarter of it free; a
  per-tenant concurrency cap and token-bucket rate limit (429 + Retry-After). Who waits goes in the
  fair queue (app/inference/fair_queue.py): levels first, then weighted shares between tenants.
- A queue deadline per request: refused at once (503 + Retry-After) when the estimated wait is
  already longer, and dropped with 503 if it is reached while queued.
- A caller that goes away while queued leaves the queue; one that goes away while running frees its
  slot. Every request ends as exactly one of: served, shed, cancelled.
- Shutdown refuses new work, sheds what is queued (503 + Retry-After) and waits for what runs; at
  the drain deadline it cuts what still runs short (app/inference/drain.py).

With several replicas, the counting part — rate tokens, tenant caps, the engine's capacity — is a
`Ledger` they share (app/data/admission.py): a request takes its slot there, and a queued one is
retried when a slot frees here or, for slots freed by other replicas, every LEDGER_POLL_S. The
order within the process (levels, fair shares, deadlines) stays local. Pure asyncio, no I/O of its
own: metrics go out through hooks, shared counts through the ledger.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import NoReturn, Protocol

import structlog

from app.domain.priority import TenantLimits, TokenBucket, Verdict
from app.errors import DatabaseUnavailable, Shed
from app.inference.drain import CUT_OFF_GRACE_S, Drain
from app.inference.fair_queue import FairQueue, Ticket

log = structlog.get_logger("bill_assistant.admission")
# How often a queue that waits on the shared ledger looks for slots freed by other replicas.
LEDGER_POLL_S = 0.02


class Ledger(Protocol):
    """Counts shared by every replica (app/data/admission.py is the Postgres one)."""

    async def enter(
        self, tenant: str, limits: TenantLimits, *, take_token: bool, want_slot: bool, slots: int, lease: str
    ) -> tuple[Verdict, float]: ...

    async def leave(self, lease: str) -> None: ...


@dataclass
class Admission:
    tenant: str
    level: int
    wait_s: float


@dataclass(kw_only=True)
class Hooks:
    """Where the scheduler reports what happens (the app wires Prometheus here)."""

    admitted: Callable[[str, int, float], None] = lambda tenant, level, wait_s: None
    shed: Callable[[str, int, str], None] = lambda tenant, level, reason: None
    cancelled: Callable[[str, int, str], None] = lambda tenant, level, where: None
    depth: Callable[[str, int, int], None] = lambda tenant, level, depth: None


@dataclass(kw_only=True)
class Scheduler:
    capacity: int
    # Batch work (level 0) starts only while fewer than this share of the slots are busy: the rest
    # stays free for people, who then find a slot at once instead of waiting behind long jobs.
    batch_share: float = 0.75
    clock: Callable[[], float] = time.monotonic
    service_time_s: float = 1.0  # running estimate (EWMA) of how long an admitted request holds its slot
    hooks: Hooks = field(default_factory=Hooks)
    ledger: Ledger | None = None  # None: this process counts alone

    def __post_init__(self) -> None:
        self.in_flight = 0
        self._running: dict[str, int] = defaultdict(int)
        self._queue = FairQueue(self.hooks.depth)
        self.buckets: dict[str, TokenBucket] = {}  # the tenants' rates when this process counts alone
        self._closing = False
        self._drain_deadline: float | None = None
        self.drain = Drain()
        self._idle = asyncio.Event()
        self._idle.set()
        self._wake = asyncio.Event()  # with a ledger: something may have freed a slot
        self._dispatcher: asyncio.Task[None] | None = None

    # --- public ------------------------------------------------------------------------------------

    @asynccontextmanager
    async def admit(self, tenant: str, limits: TenantLimits, level: int, deadline_s: float) -> AsyncIterator[Admission]:
        enqueued = self.clock()
        lease = await self._enter(tenant, limits, level)
        if lease is None:
            wait = self.estimated_wait_s(level)
            if wait > deadline_s:
                self._shed(tenant, level, 503, "overloaded", wait, f"the engine is busy: about {wait:.1f} s to wait")
            lease = await self._wait_in_queue(tenant, level, limits, enqueued, deadline_s)
        waited = self.clock() - enqueued
        self.hooks.admitted(tenant, level, waited)
        started = self.clock()
        completed = False
        try:
            yield Admission(tenant, level, waited)
            completed = True
        finally:
            if not completed:
                self.hooks.cancelled(tenant, level, "running")
            await self._release(tenant, lease, self.clock() - started)

    def estimated_wait_s(self, level: int) -> float:
        """How long a new request at `level` would wait: work ahead of it over the capacity."""
        ahead = self._queue.ahead(level)
        busy = self.in_flight - self.capacity + 1
        return max(0, ahead + busy) * self.service_time_s / self.capacity

    def queued(self) -> int:
        return len(self._queue)

    def close(self, timeout_s: float) -> None:
        """Start the drain: refuse new work, shed what is queued (503), and cut what still runs short
        `timeout_s` from now (`drain`). The first call sets the deadline; later calls keep it."""
        if self._closing:
            return
        self._closing = True
        self._drain_deadline = self.clock() + timeout_s
        for ticket in self._queue.clear():
            self.hooks.shed(ticket.tenant, ticket.level, "shutting_down")
            ticket.granted.set_exception(Shed(503, "shutting_down", 5, "the service is shutting down"))
        self._wake.set()  # the ledger's dispatcher (if any) sees the queue empty and ends
        self.drain.start(timeout_s)

    async def shutdown(self, timeout_s: float = 30.0) -> None:
        """`close`, then wait for admitted work to finish: until the drain deadline, plus the grace
        that work cut short at the deadline gets to answer (TimeoutError after that)."""
        self.close(timeout_s)
        assert self._drain_deadline is not None
        left = max(0.0, self._drain_deadline - self.clock()) + CUT_OFF_GRACE_S
        await asyncio.wait_for(self._idle.wait(), left)

    # --- internals ---------------------------------------------------------------------------------

    def _shed(self, tenant: str, level: int, status: int, reason: str, retry_after: float, message: str) -> NoReturn:
        self.hooks.shed(tenant, level, reason)
        raise Shed(status, reason, max(1.0, math.ceil(retry_after)), message)

    async def _enter(self, tenant: str, limits: TenantLimits, level: int) -> str | None:
        """Take a rate token, and a slot if nobody here is ahead: the slot's lease ("" without a
        ledger), or None to queue."""
        if self.ledger is None:
            now = self.clock()
            bucket = self.buckets.setdefault(tenant, TokenBucket(tokens=max(limits.rate_per_s, 1.0), updated=now))
            self._check_rate(tenant, limits, level, bucket.take(now, limits.rate_per_s))
            self._check_open(tenant, level)
            if not self._can_run_now(tenant, level, limits):
                return None
            self._start(tenant)
            return ""
        lease = uuid.uuid4().hex
        want_slot = not self._closing and self._can_run_now(tenant, level, limits)
        try:
            verdict, retry_after = await self.ledger.enter(
                tenant, limits, take_token=True, want_slot=want_slot, slots=self._slots(level), lease=lease
            )
        except asyncio.CancelledError:
            await self._leave(lease)  # the caller left mid-call: the ledger may have granted it
            raise
        self._check_rate(tenant, limits, level, retry_after if verdict == "rate_limited" else 0.0)
        if self._closing and verdict == "granted":
            await self._leave(lease)
        self._check_open(tenant, level)
        if verdict != "granted":
            return None
        self._start(tenant)
        return lease

    def _check_rate(self, tenant: str, limits: TenantLimits, level: int, retry_after: float) -> None:
        if retry_after > 0:
            message = f"over {limits.rate_per_s:g} requests/s for this tenant"
            self._shed(tenant, level, 429, "rate_limited", retry_after, message)

    def _check_open(self, tenant: str, level: int) -> None:
        if self._closing:
            self._shed(tenant, level, 503, "shutting_down", 5, "the service is shutting down; retry shortly")

    async def _leave(self, lease: str) -> None:
        if self.ledger is None or not lease:
            return
        try:
            # Shielded: a request cancelled again while it gives its slot back must still give it.
            await asyncio.shield(self.ledger.leave(lease))
        except DatabaseUnavailable:
            # The answer stands; the lease, no longer renewed, expires on its own.
            log.warning("admission: could not give a slot back", lease=lease)

    async def _release(self, tenant: str, lease: str, held_s: float | None) -> None:
        try:
            await self._leave(lease)
        finally:
            self._finish(tenant, held_s)

    def _slots(self, level: int) -> int:
        return self.capacity if level > 0 else max(1, math.floor(self.capacity * self.batch_share))

    def _has_slot(self, level: int) -> bool:
        return self.in_flight < self._slots(level)

    def _can_run_now(self, tenant: str, level: int, limits: TenantLimits) -> bool:
        if self.in_flight >= self._slots(level) or self._running[tenant] >= limits.max_concurrency:
            return False
        return not self._queue.waiting(level)  # do not overtake anyone waiting at this level or above

    async def _wait_in_queue(
        self, tenant: str, level: int, limits: TenantLimits, enqueued: float, deadline_s: float
    ) -> str:
        """Queue until granted (the slot's lease), past the deadline (503) or cancelled."""
        ticket = Ticket(tenant, level, limits, enqueued, asyncio.get_running_loop().create_future())
        self._queue.push(ticket)
        self._dispatch()  # a slot may be free for this tenant while others wait only for their caps
        try:
            return await asyncio.wait_for(asyncio.shield(ticket.granted), deadline_s)
        except TimeoutError:
            if not self._queue.withdraw(ticket):  # granted in the same instant: keep it
                return ticket.granted.result()
            message = f"waited {deadline_s:g} s for the engine; try again shortly"
            self._shed(tenant, level, 503, "deadline", self.estimated_wait_s(level), message)
        except asyncio.CancelledError:
            if not self._queue.withdraw(ticket):  # the slot was already given to us: hand it on
                await self._release(tenant, ticket.granted.result(), None)
            self.hooks.cancelled(tenant, level, "queued")
            raise

    def _start(self, tenant: str) -> None:
        self.in_flight += 1
        self._running[tenant] += 1
        self._idle.clear()

    def _finish(self, tenant: str, held_s: float | None) -> None:
        self.in_flight -= 1
        self._running[tenant] -= 1
        if held_s is not None:
            self.service_time_s = 0.8 * self.service_time_s + 0.2 * held_s
        self._dispatch()
        if self.in_flight == 0:
            self._idle.set()

    def _dispatch(self) -> None:
        if self.ledger is not None:
            self._wake.set()
            if self._dispatcher is None and not self._closing:
                self._dispatcher = asyncio.create_task(self._dispatch_from_ledger())
            return
        while self.in_flight < self.capacity:
            ticket = self._queue.next(self._has_slot, self._running, skip=set())
            if ticket is None:
                return
            self._queue.take(ticket)
            self._start(ticket.tenant)
            ticket.granted.set_result("")

    async def _dispatch_from_ledger(self) -> None:
        """With a shared ledger, slots are granted here, one ledger call per queued request in turn,
        whenever a slot may have freed: here (woken) or on another replica (polled)."""
        assert self.ledger is not None
        while not self._closing:
            if self.queued():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), LEDGER_POLL_S)
            else:
                await self._wake.wait()
            self._wake.clear()
            at_cap: set[str] = set()  # tenants at their cap this round: the next tenant may still go
            while (ticket := self._queue.next(self._has_slot, self._running, skip=at_cap)) is not None:
                lease, slots = uuid.uuid4().hex, self._slots(ticket.level)
                try:
                    verdict, _ = await self.ledger.enter(
                        ticket.tenant, ticket.limits, take_token=False, want_slot=True, slots=slots, lease=lease
                    )
                except Exception:
                    # Queued requests wait (until their deadline) for the ledger to answer again.
                    log.warning("admission: the ledger did not answer", exc_info=True)
                    break
                if verdict == "tenant_busy":
                    at_cap.add(ticket.tenant)
                elif verdict != "granted":
                    break  # the engine is full: wait for a slot to free
                elif ticket.granted.done():  # withdrawn (deadline, disconnect) while we asked
                    await self._leave(lease)
                else:
                    self._queue.take(ticket)
                    self._start(ticket.tenant)
                    ticket.granted.set_result(lease)
