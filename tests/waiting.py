"""Waiting in tests: every wait has a deadline, and one that runs out says what it waited for,
instead of hanging the run."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable


async def until(
    what: str, condition: Callable[[], bool | Awaitable[bool]], *, timeout_s: float = 10, every_s: float = 0.01
) -> None:
    """Poll `condition` (plain or async) until it holds; fail naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        held = condition()
        if inspect.isawaitable(held):
            held = await held
        if held:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout_s:g} s for {what}, in vain")
        await asyncio.sleep(every_s)
