"""The bank's rate for work that never reaches the engine (a customer's message to a person): a token
from the same bucket the scheduler's answers take theirs from (app/inference/scheduler.py) — the
ledger's in Postgres when admission is shared, this process's otherwise — and no slot. So a flood of
messages is refused at the rate the bank's questions are (before: messages skipped it entirely)."""

from __future__ import annotations

import math
import uuid

from app.domain.priority import TenantLimits, TokenBucket
from app.errors import Shed
from app.inference.scheduler import Scheduler


async def take_token(scheduler: Scheduler, tenant: str, limits: TenantLimits, level: int) -> None:
    """One of the tenant's rate tokens; 429 `rate_limited` with Retry-After when there is none."""
    ledger, now = scheduler.ledger, scheduler.clock()
    if ledger is None:
        bucket = scheduler.buckets.setdefault(tenant, TokenBucket(tokens=max(limits.rate_per_s, 1.0), updated=now))
        wait_s = bucket.take(now, limits.rate_per_s)
    else:  # a lease is named but, with no slot asked for, never held
        verdict, retry_s = await ledger.enter(
            tenant, limits, take_token=True, want_slot=False, slots=scheduler.capacity, lease=uuid.uuid4().hex
        )
        wait_s = retry_s if verdict == "rate_limited" else 0.0
    if wait_s > 0:
        scheduler.hooks.shed(tenant, level, "rate_limited")
        raise Shed(
            429, "rate_limited", max(1.0, math.ceil(wait_s)), f"over {limits.rate_per_s:g} requests/s for this tenant"
        )
