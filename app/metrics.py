"""Process-wide Prometheus metrics (exposed at /metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from app.inference.scheduler import Hooks

FALLBACKS = Counter(
    "bill_assistant_fallbacks_total",
    "Answers served from the deterministic template instead of the model, by reason.",
    ["reason"],
)
ANSWERS = Counter("bill_assistant_answers_total", "Answers served, by source.", ["source"])

QUEUE_DEPTH = Gauge("bill_assistant_queue_depth", "Requests waiting for the engine.", ["tenant", "level"])
ADMISSION_WAIT = Histogram(
    "bill_assistant_admission_wait_seconds",
    "Time from arrival to admission to the engine.",
    ["tenant", "level"],
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 15, 60, 120),
)
ADMITTED = Counter("bill_assistant_admitted_total", "Requests admitted to the engine.", ["tenant", "level"])
SHED = Counter("bill_assistant_shed_total", "Requests refused (429/503), by reason.", ["tenant", "level", "reason"])
CANCELLED = Counter(
    "bill_assistant_cancelled_total",
    "Requests whose caller went away, queued or running.",
    ["tenant", "level", "where"],
)


def scheduler_hooks() -> Hooks:
    def admitted(tenant: str, level: int, wait_s: float) -> None:
        ADMITTED.labels(tenant, str(level)).inc()
        ADMISSION_WAIT.labels(tenant, str(level)).observe(wait_s)

    return Hooks(
        admitted=admitted,
        shed=lambda tenant, level, reason: SHED.labels(tenant, str(level), reason).inc(),
        cancelled=lambda tenant, level, where: CANCELLED.labels(tenant, str(level), where).inc(),
        depth=lambda tenant, level, depth: QUEUE_DEPTH.labels(tenant, str(level)).set(depth),
    )
