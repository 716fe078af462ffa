"""The requests waiting for an engine slot, and which goes next: strict order between priority levels
(app/domain/priority.py); within a level, weighted fair sharing between tenants by stride scheduling.
Each grant advances the tenant's pass by 1/weight and the backlogged tenant with the smallest pass
goes next, so a tenant sending 10x more still gets only its weight's share. Used by the scheduler
(app/inference/scheduler.py), which decides when a slot is free."""

from __future__ import annotations

import asyncio
from collections import defaultdict, deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from app.domain.priority import LEVELS, TenantLimits


@dataclass
class Ticket:
    tenant: str
    level: int
    limits: TenantLimits
    enqueued: float
    granted: asyncio.Future[str]  # the slot's lease (with a ledger) once granted


class FairQueue:
    def __init__(self, depth: Callable[[str, int, int], None]) -> None:
        self._depth = depth  # reports a tenant's queue length at a level
        self._queues: dict[int, dict[str, deque[Ticket]]] = {level: {} for level in LEVELS}
        self._pass: dict[tuple[int, str], float] = defaultdict(float)
        self._vtime: dict[int, float] = defaultdict(float)

    def __len__(self) -> int:
        return sum(len(q) for lvl in LEVELS for q in self._queues[lvl].values())

    def ahead(self, level: int) -> int:
        """How many wait at `level` or above."""
        return sum(len(q) for lvl in LEVELS if lvl >= level for q in self._queues[lvl].values())

    def waiting(self, level: int) -> bool:
        """Whether anyone waits at `level` or above (a new request must not overtake them)."""
        return any(self._queues[lvl] for lvl in LEVELS if lvl >= level)

    def push(self, ticket: Ticket) -> None:
        level, tenant = ticket.level, ticket.tenant
        queues = self._queues[level]
        if tenant not in queues:
            queues[tenant] = deque()
            # A tenant that was idle starts at the level's current virtual time: no saved-up credit.
            self._pass[(level, tenant)] = max(self._pass[(level, tenant)], self._vtime[level])
        queues[tenant].append(ticket)
        self._depth(tenant, level, len(queues[tenant]))

    def withdraw(self, ticket: Ticket) -> bool:
        """Take a ticket out of its queue; False if it was already granted."""
        if ticket.granted.done():
            return ticket.granted.exception() is not None
        queue = self._queues[ticket.level].get(ticket.tenant)
        if queue is not None and ticket in queue:
            queue.remove(ticket)
            if not queue:
                del self._queues[ticket.level][ticket.tenant]
            self._depth(ticket.tenant, ticket.level, len(queue))
        ticket.granted.cancel()
        return True

    def next(self, has_slot: Callable[[int], bool], running: Mapping[str, int], skip: set[str]) -> Ticket | None:
        """The ticket to grant next (left in its queue): the highest level with a free slot, then the
        tenant with the smallest pass among those under their cap and not in `skip`."""
        for level in LEVELS:
            if not has_slot(level):
                continue
            queues = self._queues[level]
            eligible = [t for t, q in queues.items() if t not in skip and running[t] < q[0].limits.max_concurrency]
            if eligible:
                tenant = min(eligible, key=lambda t: (self._pass[(level, t)], queues[t][0].enqueued))
                return queues[tenant][0]
        return None

    def take(self, ticket: Ticket) -> None:
        """Take the ticket `next` chose out of its queue and advance its tenant's pass."""
        level, tenant = ticket.level, ticket.tenant
        queue = self._queues[level][tenant]
        assert queue[0] is ticket
        queue.popleft()
        if not queue:
            del self._queues[level][tenant]
        self._vtime[level] = self._pass[(level, tenant)]
        self._pass[(level, tenant)] += 1 / ticket.limits.weight
        self._depth(tenant, level, len(queue))

    def clear(self) -> Iterator[Ticket]:
        """Empty every queue, yielding each ticket that waited."""
        for level in LEVELS:
            queues, self._queues[level] = self._queues[level], {}
            for queue in queues.values():
                yield from queue
