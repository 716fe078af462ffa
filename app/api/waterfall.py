"""An answer's latency waterfall: its recorded stages as bars on one time axis, in pipeline order."""

from __future__ import annotations

import msgspec

# The stages an audit row holds, in the order a request meets them (what an agent calls each is the
# console's words, "stage"). The engine's queue, time to first token and decode happen inside
# "engine". The row is written before its own write is timed, so "audit" is never among them; a
# cache hit's row is written by the statement that finds it (app/data/history.py), so its "db" is
# not either; "cache" is in rows from before a hit was found by the records' statement (0010).
STAGES = (
    "auth",
    "admission",
    "db",
    "facts",
    "library",
    "cache",
    "explain",
    "prompt",
    "engine",
    "queue",
    "ttft",
    "decode",
    "validate",
)
MIN_WIDTH = 0.4  # per cent of the axis: a stage of a few microseconds stays visible


class Bar(msgspec.Struct, frozen=True, kw_only=True):
    stage: str
    start_ms: float
    duration_ms: float
    left: float  # per cent of the axis
    width: float


def waterfall(starts: dict[str, float], timings: dict[str, float]) -> tuple[list[Bar], float]:
    """One bar per stage that has both a start and a duration, and the length of the axis in ms:
    the request's total, or the end of a stage that reaches past it."""
    recorded = [stage for stage in STAGES if stage in starts and stage in timings]
    axis = max([timings.get("total", 0.0), *(starts[s] + timings[s] for s in recorded)])
    if axis <= 0:
        return [], 0.0
    bars = []
    for stage in recorded:
        start, duration = starts[stage], timings[stage]
        left = min(start / axis * 100, 100 - MIN_WIDTH)
        width = min(max(duration / axis * 100, MIN_WIDTH), 100 - left)
        bars.append(
            Bar(
                stage=stage,
                start_ms=start,
                duration_ms=duration,
                left=round(left, 3),
                width=round(width, 3),
            )
        )
    return bars, axis
