"""Who goes first when the engine is busy: the effective priority of a request.

A request's level comes from its channel — who is waiting for it — capped by its tenant's class:

| channel  | who waits              | level | queue deadline |
|----------|------------------------|-------|----------------|
| widget   | a customer, on the page | 3     | 2 s            |
| console  | a bank employee         | 2     | 5 s            |
| api      | another system, live    | 1     | 15 s           |
| batch    | nobody                  | 0     | 120 s          |

| tenant class | highest level |
|--------------|---------------|
| interactive  | 3             |
| standard     | 2             |
| batch        | 1 (and its batch channel stays 0) |

So a batch-class tenant never outranks a widget request of an interactive one, and batch work is
always last.

Inside SGLang (docs/deploy.md, "Priority inside SGLang"): the level is sent as the request's
`priority`, spread to `level * SGLANG_PRIORITY_STEP` (0, 10, 20, 30). The workers run with
`--enable-priority-scheduling --schedule-policy fcfs` (the waiting queue sorted by priority, then
arrival: `_sort_by_priority_and_fcfs` in sglang/srt/managers/schedule_policy.py) and
`--priority-scheduling-preemption-threshold SGLANG_PREEMPTION_THRESHOLD` (15). SGLang preempts a
running request for a waiting one only when the batch is full and `waiting - running > threshold`
(`PrefillAdder.preempt_to_schedule`), so a request preempts work two or more levels below it and
never the level just below: a widget answer preempts api and batch work, a console answer preempts
batch work, and a widget answer never throws away a console answer halfway through.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from app.domain.vocabulary import Channel, PriorityClass

CHANNEL_LEVEL: dict[Channel, int] = {"widget": 3, "console": 2, "api": 1, "batch": 0}
CLASS_CAP: dict[PriorityClass, int] = {"interactive": 3, "standard": 2, "batch": 1}
# How long a request may wait for the engine before it is refused (a person gives up; a job retries).
QUEUE_DEADLINE_S: dict[Channel, float] = {"widget": 2.0, "console": 5.0, "api": 15.0, "batch": 120.0}
LEVELS = (3, 2, 1, 0)

# The spread of the level sent to SGLang, and the preemption threshold its workers run with
# (deploy/sglang/common.args; tests/deploy/test_deploy_files.py keeps the two in step).
SGLANG_PRIORITY_STEP = 10
SGLANG_PREEMPTION_THRESHOLD = 15


def effective_level(priority_class: PriorityClass, channel: Channel) -> int:
    return min(CHANNEL_LEVEL[channel], CLASS_CAP[priority_class])


def sglang_priority(level: int) -> int:
    """The `priority` SGLang gets for a request of this level (higher = more important)."""
    if level not in LEVELS:
        raise ValueError(f"unknown priority level {level}")
    return level * SGLANG_PRIORITY_STEP


@dataclass(frozen=True, kw_only=True)
class TenantLimits:
    weight: int = 1  # share of the engine within a level, relative to the other tenants there
    max_concurrency: int = 8  # requests of this tenant in the engine at once
    rate_per_s: float = 20.0  # sustained admissions per second; bursts up to the same number


# The name the answer cache's fill is admitted under, with limits of its own (Settings'
# CACHE_FILL_*): not a tenant slug (those have no "~"), so it never shares a tenant's counts.
FILL_BUDGET = "~cache-fill"


def fill_budget(slots: int, rate_per_s: float) -> tuple[str, TenantLimits]:
    """What the cache fill is admitted as: its own name and limits, one slot's weight."""
    return FILL_BUDGET, TenantLimits(max_concurrency=slots, rate_per_s=rate_per_s)


# What the admission ledger shared by the replicas (app/data/admission.py) answers to one attempt:
# a slot (granted), a rate token only (queued: no slot was asked for), or why not.
Verdict = Literal["granted", "queued", "rate_limited", "tenant_busy", "engine_busy"]


@dataclass(kw_only=True)
class TokenBucket:
    """A tenant's rate limit: bursts up to max(rate, 1) requests, then `rate` a second."""

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
