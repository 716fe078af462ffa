"""`until_disconnect` runs the work in the caller's task and cancels it when the client goes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from app.api.disconnect import ClientGone, until_disconnect


class Connection:
    """The ASGI receive side of a request whose body has been read: the disconnect when told."""

    def __init__(self) -> None:
        self.closed = asyncio.Event()

    async def receive(self) -> dict[str, Any]:
        await self.closed.wait()
        return {"type": "http.disconnect"}


async def slow(seconds: float, done: list[str]) -> str:
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        done.append("cancelled")
        raise
    done.append("finished")
    return "answer"


async def test_the_work_that_ends_first_gives_its_result() -> None:
    done: list[str] = []
    result = await until_disconnect(Connection(), slow(0, done))  # type: ignore[arg-type]
    assert (result, done) == ("answer", ["finished"])
    task = asyncio.current_task()
    assert task is not None
    assert task.cancelling() == 0


async def test_a_client_that_goes_cancels_the_work() -> None:
    connection, done = Connection(), []  # type: ignore[var-annotated]

    async def request() -> str:
        return await until_disconnect(connection, slow(60, done))  # type: ignore[arg-type]

    running = asyncio.create_task(request())
    await asyncio.sleep(0.01)
    connection.closed.set()
    with pytest.raises(ClientGone):
        await asyncio.wait_for(running, 1)
    assert done == ["cancelled"]


async def test_a_cancellation_from_outside_is_not_taken_for_the_client() -> None:
    done: list[str] = []

    async def request() -> str:
        return await until_disconnect(Connection(), slow(60, done))  # type: ignore[arg-type]

    running = asyncio.create_task(request())
    await asyncio.sleep(0.01)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert done == ["cancelled"]
