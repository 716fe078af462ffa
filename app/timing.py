"""Per-stage wall-clock timings of one request, in milliseconds."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from time import perf_counter


class Stopwatch:
    __slots__ = ("_start", "stages", "starts")

    def __init__(self, start: float | None = None) -> None:
        self._start = perf_counter() if start is None else start
        self.stages: dict[str, float] = {}
        self.starts: dict[str, float] = {}  # when each stage first began, ms after the start: a waterfall

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        began = perf_counter()
        self.starts.setdefault(name, round((began - self._start) * 1000, 3))
        try:
            yield
        finally:
            self.stages[name] = self.stages.get(name, 0.0) + (perf_counter() - began) * 1000

    def record(self, name: str, start_ms: float, ms: float) -> None:
        """A stage measured elsewhere (the engine's queue, time to first token, decode)."""
        self.starts[name] = round(start_ms, 3)
        self.stages[name] = ms

    def elapsed_ms(self) -> float:
        return (perf_counter() - self._start) * 1000

    def snapshot(self) -> dict[str, float]:
        """Stages so far plus the total since the request arrived, rounded for humans."""
        result = {name: round(ms, 3) for name, ms in self.stages.items()}
        result["total"] = round(self.elapsed_ms(), 3)
        return result
