"""Percentiles and summaries, the way the reports compute them."""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile: the smallest value with at least q% of the values at or below it."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def cdf(values: Sequence[float], points: int = 200) -> list[tuple[float, float]]:
    """(value, share of values <= it), at most `points` steps, for plotting."""
    ordered = sorted(values)
    if not ordered:
        return []
    step = max(1, len(ordered) // points)
    result = [(v, (i + 1) / len(ordered)) for i, v in enumerate(ordered) if i % step == 0]
    if result[-1][1] < 1.0:
        result.append((ordered[-1], 1.0))
    return result
