"""Stop working for a caller who has gone: the pipeline runs as a child task, cancelled when the
client disconnects, so it leaves the admission queue or aborts its engine request."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any, TypeVar

from litestar import Request

T = TypeVar("T")


class ClientGone(Exception):
    """The client closed the connection before the answer was ready (logged as 499)."""


async def _disconnected(request: Request) -> None:  # type: ignore[type-arg]
    # The body has been read, so the next ASGI message is the disconnect (or nothing, until the end).
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def until_disconnect(request: Request, work: Coroutine[Any, Any, T]) -> T:  # type: ignore[type-arg]
    job = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({job, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
    if job.done():
        return job.result()
    job.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await job
    raise ClientGone
