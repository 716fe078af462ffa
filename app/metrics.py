"""Process-wide Prometheus metrics (exposed at /metrics)."""

from __future__ import annotations

from typing import Generic, TypeVar

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.metrics import MetricWrapperBase

from app.inference.scheduler import Hooks

M = TypeVar("M", bound=MetricWrapperBase)


class Children(Generic[M]):
    """A labelled metric's children, looked up by label values in a dict: `labels()` checks and
    joins its arguments under a lock on every call (1.5-3 µs; a request records about twenty),
    a dict look-up takes 0.07 µs. Label values here come from small fixed sets (tenants, channels,
    stages, levels, sources, reasons), as prometheus_client itself keeps every child anyway."""

    __slots__ = ("_children", "_metric")

    def __init__(self, metric: M) -> None:
        self._metric = metric
        self._children: dict[tuple[str, ...], M] = {}

    def __call__(self, *values: str) -> M:
        child = self._children.get(values)
        if child is None:
            child = self._children[values] = self._metric.labels(*values)
        return child


FALLBACKS = Counter(
    "bill_assistant_fallbacks_total",
    "Answers served from the deterministic template instead of the model, by reason.",
    ["reason"],
)
ANSWERS = Counter("bill_assistant_answers_total", "Answers served, by source.", ["source"])
CACHE_LOOKUPS = Counter(
    "bill_assistant_cache_lookups_total",
    "Answer cache look-ups of cacheable questions, by tenant, intent and result (hit or miss).",
    ["tenant", "intent", "result"],
)
CACHE_FILL_BACKLOG = Gauge(
    "bill_assistant_cache_fill_backlog",
    "Canonical answers the scheduled fill still has to make (the filling replica's; 0 elsewhere).",
    multiprocess_mode="livemax",
)

# Gauges say how `serve --workers N` adds them up across worker processes (ignored in one process).
QUEUE_DEPTH = Gauge(
    "bill_assistant_queue_depth", "Requests waiting for the engine.", ["tenant", "level"], multiprocess_mode="livesum"
)
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


STAGE_SECONDS = Histogram(
    "bill_assistant_stage_seconds",
    "Time spent in each stage of a request (auth, admission, db, facts, prompt, ttft, decode, validate, total...).",
    ["tenant", "channel", "stage"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
# What a customer waits for, from the request's arrival (admission, records, prompt and engine
# included), per answer: the first answer text released (a model sentence past the truth contract,
# a cached answer or the deterministic text) and the whole answer. The SLO panels and alerts read these.
_ANSWER_BUCKETS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 20, 60)
ANSWER_FIRST_TEXT = Histogram(
    "bill_assistant_answer_first_text_seconds",
    "Time from a request's arrival to the first answer text it releases (time to first token as the customer sees it).",
    ["tenant", "channel"],
    buckets=_ANSWER_BUCKETS,
)
ANSWER_SECONDS = Histogram(
    "bill_assistant_answer_seconds",
    "Time from a request's arrival to its whole, audited answer, by where the answer came from.",
    ["tenant", "channel", "source"],
    buckets=_ANSWER_BUCKETS,
)
PROMPT_TOKENS = Counter("bill_assistant_prompt_tokens_total", "Prompt tokens sent to the engine.", ["tenant"])
CACHED_TOKENS = Counter(
    "bill_assistant_cached_prompt_tokens_total",
    "Prompt tokens the engine served from its prefix cache (hit share = this / prompt tokens).",
    ["tenant"],
)
COMPLETION_TOKENS = Counter("bill_assistant_completion_tokens_total", "Tokens generated.", ["tenant"])
SPEC_ACCEPT_RATE = Histogram(
    "bill_assistant_spec_accept_rate",
    "Speculative decoding acceptance rate per request, where the engine reports it.",
    buckets=(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
)


def scheduler_hooks() -> Hooks:
    admitted_total, admission_wait = Children(ADMITTED), Children(ADMISSION_WAIT)
    shed, cancelled, depth = Children(SHED), Children(CANCELLED), Children(QUEUE_DEPTH)

    def admitted(tenant: str, level: int, wait_s: float) -> None:
        admitted_total(tenant, str(level)).inc()
        admission_wait(tenant, str(level)).observe(wait_s)

    return Hooks(
        admitted=admitted,
        shed=lambda tenant, level, reason: shed(tenant, str(level), reason).inc(),
        cancelled=lambda tenant, level, where: cancelled(tenant, str(level), where).inc(),
        depth=lambda tenant, level, n: depth(tenant, str(level)).set(n),
    )


HTTP_SHED = Counter(
    "bill_assistant_http_shed_total",
    "Requests refused with 503 by the per-process overload guard (app/api/overload.py), by reason and priority"
    " level (any: before the route knew it).",
    ["reason", "level"],
)
HTTP_IN_FLIGHT = Gauge(
    "bill_assistant_http_in_flight", "HTTP requests being handled (all workers).", multiprocess_mode="livesum"
)
LOOP_LAG = Gauge(
    "bill_assistant_event_loop_lag_seconds",
    "How late the event loop last woke a 50 ms sleep (the slowest worker).",
    multiprocess_mode="livemax",
)
HANDOVERS = Counter(
    "bill_assistant_handovers_total", "Widget conversations handed to an agent, by reason.", ["tenant", "reason"]
)
HANDOVER_WAIT = Histogram(
    "bill_assistant_handover_wait_seconds",
    "How long a conversation handed over waited until an agent took it.",
    ["tenant"],
    buckets=(1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600),
)

# The children the per-request code records into (see `Children`).
FALLBACKS_BY = Children(FALLBACKS)
ANSWERS_BY = Children(ANSWERS)
CACHE_LOOKUPS_BY = Children(CACHE_LOOKUPS)
STAGE_SECONDS_BY = Children(STAGE_SECONDS)
ANSWER_FIRST_TEXT_BY = Children(ANSWER_FIRST_TEXT)
ANSWER_SECONDS_BY = Children(ANSWER_SECONDS)
PROMPT_TOKENS_BY = Children(PROMPT_TOKENS)
CACHED_TOKENS_BY = Children(CACHED_TOKENS)
COMPLETION_TOKENS_BY = Children(COMPLETION_TOKENS)
HTTP_SHED_BY = Children(HTTP_SHED)
HANDOVERS_BY = Children(HANDOVERS)
HANDOVER_WAIT_BY = Children(HANDOVER_WAIT)
