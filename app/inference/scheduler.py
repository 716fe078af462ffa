"""Admission in front of the engine: who runs, who waits, who is refused.

- A global in-flight cap sized to the engine's capacity; batch work leaves a quarter of it free.
- Strict order between priority levels (app/domain/priority.py); within a level, weighted fair
  sharing between tenants by stride scheduling: each admission advances the tenant's pass by
  1/weight and the backlogged tenant with the smallest pass goes next, so a tenant sending 10x more
  still gets only its weight's share.
- A per-tenant concurrency cap and a per-tenant token-bucket rate limit (429 + Retry-After).
- A queue deadline per request: refused at once (503 + Retry-After) when the estimated wait is
  already longer, and dropped with 503 if it is reached while queued.
- A caller that goes away while queued leaves the queue; one that goes away while running frees its
  slot. Every request ends as exactly one of: served, shed, cancelled.
- Shutdown refuses new work, sheds what is queued (503 + Retry-After) and waits for what runs; at
  the drain deadline it cuts what still runs short (`Drain`): a stream that waits on the engine
  then ends as a deterministic answer, audited, instead of holding the process past the deadline.

With several replicas, the counting part — rate tokens, tenant caps, the engine's capacity — is a
`Ledger` they share (app/data/admission.py): a request takes its slot there, and a queued one is
retried when a slot frees here or, for slots freed by other replicas, every LEDGER_POLL_S. The
order within the process (levels, fair shares, deadlines) stays local.

Pure asyncio, no I/O of its own: the app and the benchmarks drive it; metrics are reported through
hooks, shared counts through the ledger.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
import uuid
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import NoReturn, Protocol

import structlog

from app.domain.priority import LEVELS, TenantLimits, Verdict
from app.errors import DatabaseUnavailable, Shed

log = structlog.get_logger("bill_assistant.admission")
# How often a queue that waits on the shared ledger looks for slots freed by other replicas.
LEDGER_POLL_S = 0.02


class Ledger(Protocol):
    """Counts shared by every replica (app/data/admission.py is the Postgres one)."""

    async def enter(
        self, tenant: str, limits: TenantLimits, *, take_token: bool, want_slot: bool, slots: int, lease: str
    ) -> tuple[Verdict, float]: ...

    async def leave(self, lease: str) -> None: ...


@dataclass(kw_only=True)
class _Bucket:
    tokens: float
    updated: float

    def take(self, now: float, rate: float) -> float:
        """Take a token; return 0, or the seconds until one is available."""
        self.tokens = min(max(rate, 1.0), self.tokens + (now - self.updated) * rate)
        self.updated = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / rate


@dataclass
class _Ticket:
    tenant: str
    level: int
    limits: TenantLimits
    enqueued: float
    granted: asyncio.Future[str]  # the slot's lease (with a ledger) once granted


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


# After the drain deadline, how long work that was cut short gets to answer (the deterministic text)
# and write its audit row before the server stops waiting for it.
CUT_OFF_GRACE_S = 1.0


class Drain:
    """The drain deadline of a shutdown, for the work that is still running when it comes: whoever
    waits on something slow (the engine) subscribes a callback, called once at the deadline, or at
    once if the deadline has already passed."""

    def __init__(self) -> None:
        self.cut_off = False
        self._callbacks: set[Callable[[], None]] = set()
        self._timer: asyncio.TimerHandle | None = None

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` at the drain deadline; returns the function that unsubscribes it."""
        if self.cut_off:
            callback()
            return lambda: None
        self._callbacks.add(callback)
        return lambda: self._callbacks.discard(callback)

    def start(self, timeout_s: float) -> None:
        """The deadline is `timeout_s` from now (a second call keeps the first deadline)."""
        if self._timer is None and not self.cut_off:
            self._timer = asyncio.get_running_loop().call_later(max(0.0, timeout_s), self.cut)

    def cut(self) -> None:
        self.cut_off = True
        callbacks, self._callbacks = self._callbacks, set()
        for callback in callbacks:
            callback()


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
        self._queues: dict[int, dict[str, deque[_Ticket]]] = {level: {} for level in LEVELS}
        self._pass: dict[tuple[int, str], float] = defaultdict(float)
        self._vtime: dict[int, float] = defaultdict(float)
        self._buckets: dict[str, _Bucket] = {}
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
        ahead = sum(len(q) for lvl in LEVELS if lvl >= level for q in self._queues[lvl].values())
        busy = self.in_flight - self.capacity + 1
        return max(0, ahead + busy) * self.service_time_s / self.capacity

    def queued(self) -> int:
        return sum(len(q) for lvl in LEVELS for q in self._queues[lvl].values())

    def close(self, timeout_s: float) -> None:
        """Start the drain: refuse new work, shed what is queued (503), and cut what still runs short
        `timeout_s` from now (`drain`). The first call sets the deadline; later calls keep it."""
        if self._closing:
            return
        self._closing = True
        self._drain_deadline = self.clock() + timeout_s
        for level in LEVELS:
            for tenant, queue in self._queues[level].items():
                for ticket in queue:
                    self.hooks.shed(tenant, level, "shutting_down")
                    ticket.granted.set_exception(Shed(503, "shutting_down", 5, "the service is shutting down"))
            self._queues[level].clear()
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
            bucket = self._buckets.setdefault(tenant, _Bucket(tokens=max(limits.rate_per_s, 1.0), updated=now))
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
            self._shed(tenant, level, 429, "rate_limited", retry_after,
                       f"over {limits.rate_per_s:g} requests/s for this tenant")  # fmt: skip

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

    def _can_run_now(self, tenant: str, level: int, limits: TenantLimits) -> bool:
        if self.in_flight >= self._slots(level) or self._running[tenant] >= limits.max_concurrency:
            return False
        # Do not overtake anyone waiting at this level or above.
        return not any(self._queues[lvl] for lvl in LEVELS if lvl >= level)

    async def _wait_in_queue(
        self, tenant: str, level: int, limits: TenantLimits, enqueued: float, deadline_s: float
    ) -> str:
        """Queue until granted (the slot's lease), past the deadline (503) or cancelled."""
        ticket = _Ticket(tenant, level, limits, enqueued, asyncio.get_running_loop().create_future())
        queues = self._queues[level]
        if tenant not in queues:
            queues[tenant] = deque()
            # A tenant that was idle starts at the level's current virtual time: no saved-up credit.
            self._pass[(level, tenant)] = max(self._pass[(level, tenant)], self._vtime[level])
        queues[tenant].append(ticket)
        self.hooks.depth(tenant, level, len(queues[tenant]))
        self._dispatch()  # a slot may be free for this tenant while others wait only for their caps
        try:
            return await asyncio.wait_for(asyncio.shield(ticket.granted), deadline_s)
        except TimeoutError:
            if not self._withdraw(ticket):  # granted in the same instant: keep it
                return ticket.granted.result()
            self._shed(tenant, level, 503, "deadline", self.estimated_wait_s(level),
                       f"waited {deadline_s:g} s for the engine; try again shortly")  # fmt: skip
        except asyncio.CancelledError:
            if not self._withdraw(ticket):  # the slot was already given to us: hand it on
                await self._release(tenant, ticket.granted.result(), None)
            self.hooks.cancelled(tenant, level, "queued")
            raise

    def _withdraw(self, ticket: _Ticket) -> bool:
        """Take a ticket out of its queue; False if it was already granted."""
        if ticket.granted.done():
            return ticket.granted.exception() is not None
        queue = self._queues[ticket.level].get(ticket.tenant)
        if queue is not None and ticket in queue:
            queue.remove(ticket)
            if not queue:
                del self._queues[ticket.level][ticket.tenant]
            self.hooks.depth(ticket.tenant, ticket.level, len(queue))
        ticket.granted.cancel()
        return True

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
            ticket = self._next(skip=set())
            if ticket is None:
                return
            self._take(ticket)
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
            while (ticket := self._next(skip=at_cap)) is not None:
                lease = uuid.uuid4().hex
                try:
                    verdict, _ = await self.ledger.enter(ticket.tenant, ticket.limits, take_token=False, want_slot=True,
                                                         slots=self._slots(ticket.level), lease=lease)  # fmt: skip
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
                    self._take(ticket)
                    self._start(ticket.tenant)
                    ticket.granted.set_result(lease)

    def _next(self, *, skip: set[str]) -> _Ticket | None:
        """The ticket to grant next (left in its queue): the highest level with a free slot, then the
        tenant with the smallest pass among those under their cap and not in `skip`."""
        for level in LEVELS:
            if self.in_flight >= self._slots(level):
                continue
            queues = self._queues[level]
            eligible = [
                t for t, q in queues.items() if t not in skip and self._running[t] < q[0].limits.max_concurrency
            ]
            if eligible:
                tenant = min(eligible, key=lambda t: (self._pass[(level, t)], queues[t][0].enqueued))
                return queues[tenant][0]
        return None

    def _take(self, ticket: _Ticket) -> None:
        """Take the ticket `_next` chose out of its queue and advance its tenant's pass."""
        level, tenant = ticket.level, ticket.tenant
        queue = self._queues[level][tenant]
        assert queue[0] is ticket
        queue.popleft()
        if not queue:
            del self._queues[level][tenant]
        self._vtime[level] = self._pass[(level, tenant)]
        self._pass[(level, tenant)] += 1 / ticket.limits.weight
        self.hooks.depth(tenant, level, len(queue))
