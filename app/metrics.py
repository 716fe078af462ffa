"""Process-wide Prometheus metrics (exposed at /metrics)."""

from __future__ import annotations

from prometheus_client import Counter

FALLBACKS = Counter(
    "bill_assistant_fallbacks_total",
    "Answers served from the deterministic template instead of the model, by reason.",
    ["reason"],
)
ANSWERS = Counter("bill_assistant_answers_total", "Answers served, by source.", ["source"])
