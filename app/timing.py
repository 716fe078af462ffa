"""Per-stage wall-clock timings of one request, in milliseconds."""

from __future__ import annotations

from time import perf_counter
from types import TracebackType


class Stopwatch:
    __slots__ = ("_start", "stages", "starts")

    def __init__(self, start: float | None = None) -> None:
        self._start = perf_counter() if start is None else start
        self.stages: dict[str, float] = {}
        self.starts: dict[str, float] = {}  # when each stage first began, ms after the start: a waterfall

    def stage(self, name: str) -> _Stage:
        """`with watch.stage("db"): ...` adds the block's time to the stage (about ten per answer)."""
        return _Stage(self, name)

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


class _Stage:
    """A plain context manager, not a generator one: a third of the cost, on every stage of every answer."""

    __slots__ = ("_began", "_name", "_watch")

    def __init__(self, watch: Stopwatch, name: str) -> None:
        self._watch, self._name, self._began = watch, name, 0.0

    def __enter__(self) -> None:
        self._began = began = perf_counter()
        watch = self._watch
        watch.starts.setdefault(self._name, round((began - watch._start) * 1000, 3))

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        stages = self._watch.stages
        stages[self._name] = stages.get(self._name, 0.0) + (perf_counter() - self._began) * 1000
