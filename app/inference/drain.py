"""The drain deadline of a shutdown: work still running when it comes is cut short (the scheduler,
app/inference/scheduler.py, starts it): a stream that waits on the engine then ends as a
deterministic answer, audited, instead of holding the process past the deadline."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

# After the drain deadline, how long work that was cut short gets to answer (the deterministic text)
# and write its audit row before the server stops waiting for it.
CUT_OFF_GRACE_S = 1.0


class Drain:
    """The drain deadline of a shutdown, for the work that is still running when it comes: whoever
    waits on something slow (the engine) subscribes a callback, called once at the deadline, or at
    once if the deadline has already passed."""

    def __init__(self) -> None:
        self.cut_off = False
        self._callbacks: set[Callable[[], None]] = set()
        self._timer: asyncio.TimerHandle | None = None

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` at the drain deadline; returns the function that unsubscribes it."""
        if self.cut_off:
            callback()
            return lambda: None
        self._callbacks.add(callback)
        return lambda: self._callbacks.discard(callback)

    def start(self, timeout_s: float) -> None:
        """The deadline is `timeout_s` from now (a second call keeps the first deadline)."""
        if self._timer is None and not self.cut_off:
            self._timer = asyncio.get_running_loop().call_later(max(0.0, timeout_s), self.cut)

    def cut(self) -> None:
        self.cut_off = True
        callbacks, self._callbacks = self._callbacks, set()
        for callback in callbacks:
            callback()
