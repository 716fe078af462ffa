"""The tests' wait helper gives up at its deadline and names what it waited for."""

from __future__ import annotations

import pytest

from tests.waiting import until


async def test_a_wait_that_never_holds_fails_naming_what_it_waited_for() -> None:
    with pytest.raises(AssertionError, match=r"waited 0.05 s for the flag to rise, in vain"):
        await until("the flag to rise", lambda: False, timeout_s=0.05)


async def test_an_async_condition_is_awaited() -> None:
    seen: list[int] = []

    async def third_call() -> bool:
        seen.append(1)
        return len(seen) == 3

    await until("the third call", third_call, every_s=0)
    assert len(seen) == 3
