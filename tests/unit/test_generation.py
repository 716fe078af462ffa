"""`stream_model` ends at the drain deadline of a shutdown as a reason, and the engine request is
aborted; tokens that arrive together are decoded together, the answer unchanged."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from app.answers.generation import Outcome, stream_model
from app.domain.reasons import Reason
from app.inference.engine import Event, Finished, GenerationRequest, TextDelta
from app.inference.scheduler import Scheduler
from app.timing import Stopwatch


class HungEngine:
    """Writes one piece of text, then hangs until cancelled."""

    name = "fake"
    model = "fake/model"
    profile = "fake:fake/model"

    def __init__(self) -> None:
        self.cancelled: list[str] = []

    async def generate(self, request: GenerationRequest) -> AsyncIterator[Event]:
        yield TextDelta('{"answer": "The bill')
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.append(request.request_id)
            raise

    async def abort(self, request_id: str) -> None:
        pass

    async def health(self) -> bool:
        return True

    async def close(self) -> None:
        pass


async def collect(scheduler: Scheduler, engine: HungEngine, timeout_s: float) -> list[str | Outcome]:
    request = GenerationRequest(request_id="r1", prompt="p")
    stream = stream_model(engine, request, timeout_s=timeout_s, stopwatch=Stopwatch(), drain=scheduler.drain)
    return [item async for item in stream]


async def test_a_hung_engine_request_ends_at_the_drain_deadline() -> None:
    scheduler, engine = Scheduler(capacity=1), HungEngine()
    loop = asyncio.get_running_loop()
    running = asyncio.create_task(collect(scheduler, engine, timeout_s=60))
    await asyncio.sleep(0.01)
    started = loop.time()
    scheduler.close(timeout_s=0.2)
    items = await running
    assert 0.2 <= loop.time() - started < 0.4
    assert items == [
        "The bill",
        Outcome(text=None, reason=Reason(rule="engine_timeout", detail="shutdown"), usage=None),
    ]
    await asyncio.sleep(0)  # the engine's task sees its cancellation
    assert engine.cancelled == ["r1"]


async def test_after_the_drain_deadline_the_engine_is_not_waited_for() -> None:
    scheduler = Scheduler(capacity=1)
    scheduler.close(timeout_s=0)
    await asyncio.sleep(0.01)
    items = await asyncio.wait_for(collect(scheduler, HungEngine(), timeout_s=60), 1)
    assert items == [Outcome(text=None, reason=Reason(rule="engine_timeout", detail="shutdown"), usage=None)]


async def test_without_a_shutdown_the_engine_timeout_applies() -> None:
    items = await collect(Scheduler(capacity=1), HungEngine(), timeout_s=0.05)
    assert items[-1] == Outcome(text=None, reason=Reason(rule="engine_timeout"), usage=None)


class BurstEngine(HungEngine):
    """Writes a whole answer token by token without waiting in between (as when the engine's
    events arrive in one network read), then finishes."""

    async def generate(self, request: GenerationRequest) -> AsyncIterator[Event]:
        for token in ['{"', "answer", '": "', "Your", " bill", " rose", '."', "}"]:
            yield TextDelta(token)
        yield Finished(
            finish_reason="stop", prompt_tokens=5, cached_tokens=0, completion_tokens=8, ttft_ms=1.0, decode_ms=1.0
        )


async def test_tokens_that_arrive_together_are_handed_on_at_once() -> None:
    items = await collect(Scheduler(capacity=1), BurstEngine(), timeout_s=5)
    assert items[:-1] == ["Your bill rose."]
    outcome = items[-1]
    assert isinstance(outcome, Outcome)
    assert (outcome.text, outcome.reason) == ("Your bill rose.", None)
