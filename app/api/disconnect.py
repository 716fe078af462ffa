"""Stop working for a caller who has gone: a watcher task cancels the request's own task when the
client disconnects, so the pipeline leaves the admission queue or aborts its engine request.

The work runs in the request's task, not a child task of its own: one task and one
`asyncio.wait` fewer per request (issue 15)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from litestar import Request

T = TypeVar("T")


class ClientGone(Exception):
    """The client closed the connection before the answer was ready (logged as 499)."""


async def _cancel_when_gone(request: Request, task: asyncio.Task[object], gone: list[bool]) -> None:  # type: ignore[type-arg]
    # The body has been read, so the next ASGI message is the disconnect (or nothing, until the end).
    while (await request.receive())["type"] != "http.disconnect":
        pass
    gone.append(True)
    task.cancel()


async def until_disconnect(request: Request, work: Awaitable[T]) -> T:  # type: ignore[type-arg]
    task = asyncio.current_task()
    assert task is not None
    gone: list[bool] = []
    pending = task.cancelling()  # cancellations already requested, before ours
    watcher = asyncio.get_running_loop().create_task(_cancel_when_gone(request, task, gone))
    try:
        return await work
    except asyncio.CancelledError:
        if gone and task.cancelling() == pending + 1:  # ours alone: the caller went away
            raise ClientGone from None
        raise
    finally:
        watcher.cancel()
        if gone:  # ours is handled, however the work ended; another pending one still counts
            task.uncancel()
