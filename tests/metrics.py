"""The process-wide Prometheus metrics (app/metrics.py), read in tests: a value before and after."""

from __future__ import annotations

from prometheus_client import REGISTRY


def sample(name: str, labels: dict[str, str] | None = None) -> float:
    """The sample's value now; 0 for one never recorded (a labelled series not created yet)."""
    value = REGISTRY.get_sample_value(name, labels or {})
    return 0.0 if value is None else value
