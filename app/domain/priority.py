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
always last. The level is also sent to SGLang as the request's `priority` (higher = more important).
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


def effective_level(priority_class: PriorityClass, channel: Channel) -> int:
    return min(CHANNEL_LEVEL[channel], CLASS_CAP[priority_class])


@dataclass(frozen=True, kw_only=True)
class TenantLimits:
    weight: int = 1  # share of the engine within a level, relative to the other tenants there
    max_concurrency: int = 8  # requests of this tenant in the engine at once
    rate_per_s: float = 20.0  # sustained admissions per second; bursts up to the same number


# What the admission ledger shared by the replicas (app/data/admission.py) answers to one attempt:
# a slot (granted), a rate token only (queued: no slot was asked for), or why not.
Verdict = Literal["granted", "queued", "rate_limited", "tenant_busy", "engine_busy"]
