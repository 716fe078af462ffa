"""The generation unit: a plan is said claim by claim as each claim's object closes, the lead first
and only once the plan holds what its intent needs; a claim that fails a check stops the stream, so
nothing after it is said, and the engine request is aborted; at the drain deadline of a shutdown the
stream ends as a reason."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from datetime import date

from app.answers.generation import Outcome, generate
from app.answers.realize import Realizer
from app.domain.claims import Change, DriverClaim, MinimumDue
from app.domain.facts import compute_facts
from app.domain.plan import PlanCheck
from app.domain.reasons import Reason, quoted
from app.inference.engine import Event, Finished, GenerationRequest, TextDelta
from app.inference.scheduler import Scheduler
from app.timing import Stopwatch
from bench.fakes.plans import CHANGE_UP, DRIVER_1_UP, plan
from tests.histories import GYM, OCT, SEP, history

FACTS = compute_facts(history(GYM, [SEP, OCT]), date(2026, 11, 10))  # 12.00 higher, City Gym; unpaid
CHANGE = "Your bill is 12.00 EUR higher than last month: the new balance is 124.99 EUR, against 112.99 EUR"
DRIVER = " The largest change is purchases at “City Gym”: 12.00 EUR more than on your previous statement."


class ScriptedEngine:
    """Writes the given pieces of text, each after the previous was read; then hangs (`hang`) until
    cancelled, or finishes."""

    name = "fake"
    model = "fake/model"
    profile = "fake:fake/model"

    def __init__(self, pieces: Sequence[str] = (), *, hang: bool = False) -> None:
        self.pieces, self.hang = pieces, hang
        self.cancelled: list[str] = []
        self.aborted: list[str] = []

    async def generate(self, request: GenerationRequest) -> AsyncIterator[Event]:
        try:
            for piece in self.pieces:
                yield TextDelta(piece)
                await asyncio.sleep(0.01)  # one network read each
            if self.hang:
                await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.append(request.request_id)
            raise
        yield Finished(
            finish_reason="stop", prompt_tokens=5, cached_tokens=0, completion_tokens=9, ttft_ms=1.0, decode_ms=1.0
        )

    async def abort(self, request_id: str) -> None:
        self.aborted.append(request_id)

    async def health(self) -> bool:
        return True

    async def close(self) -> None:
        pass


async def collect(
    engine: ScriptedEngine, *, timeout_s: float = 5, scheduler: Scheduler | None = None, intent: str = "bill_change"
) -> list[str | Outcome]:
    request = GenerationRequest(request_id="r1", prompt="p")
    check = PlanCheck(FACTS, "bill_change" if intent == "bill_change" else "payment")
    stream = generate(
        engine,
        request,
        check=check,
        realizer=Realizer(FACTS, "en"),
        timeout_s=timeout_s,
        stopwatch=Stopwatch(),
        drain=scheduler.drain if scheduler else None,
    )
    return [item async for item in stream]


def pieces(text: str, size: int = 7) -> list[str]:
    """The text cut as an engine's tokens would be, across every brace and quote."""
    return [text[i : i + size] for i in range(0, len(text), size)]


async def test_each_claim_is_said_once_its_object_closes_the_lead_first() -> None:
    # The driver comes first in the plan; it is held until the change (the lead) is there.
    items = await collect(ScriptedEngine(pieces(plan(DRIVER_1_UP, CHANGE_UP, {"claim": "minimum_due"}))))
    texts = [i for i in items if isinstance(i, str)]
    assert len(texts) == 3
    assert texts[0].startswith(CHANGE)
    assert texts[1] == DRIVER
    assert texts[2] == " The minimum payment of 25.00 EUR is due on 25 November 2026."
    outcome = items[-1]
    assert isinstance(outcome, Outcome)
    assert outcome.reason is None
    assert outcome.text == "".join(texts)
    assert outcome.plan == [DriverClaim(n=1, direction="up"), Change(direction="up"), MinimumDue()]


async def test_a_claim_that_fails_stops_the_stream_and_aborts_the_engine() -> None:
    wrong = {"claim": "driver", "n": 1, "direction": "down"}  # City Gym went up
    engine = ScriptedEngine(pieces(plan(CHANGE_UP, DRIVER_1_UP, wrong, {"claim": "minimum_due"})), hang=True)
    items = await collect(engine)
    said = [i for i in items if isinstance(i, str)]
    assert "".join(said).startswith(CHANGE)  # checked and true: said before the failure
    assert not any("minimum" in text for text in said)  # nothing after the failed claim
    outcome = items[-1]
    assert isinstance(outcome, Outcome)
    assert outcome.text is None
    assert outcome.reason == Reason(
        rule="wrong_driver", detail="driver_went", values={"n": 1, "went": "up", "claimed": "down"}
    )
    assert engine.aborted == ["r1"]


async def test_a_plan_without_what_its_intent_needs_says_nothing() -> None:
    items = await collect(ScriptedEngine(pieces(plan(CHANGE_UP, {"claim": "minimum_due"}))))  # no cause
    assert [i for i in items if isinstance(i, str)] == []
    outcome = items[-1]
    assert isinstance(outcome, Outcome)
    assert outcome.reason == Reason(rule="missing_claim", detail="lacks", values={"kinds": ["driver"]})


async def test_an_empty_plan_or_other_output_is_refused() -> None:
    empty = await collect(ScriptedEngine([plan()]))
    prose = await collect(ScriptedEngine(['{"answer": "ok"}']))
    assert [o.reason for o in (empty[-1], prose[-1]) if isinstance(o, Outcome)] == [
        Reason(rule="empty"),
        quoted("invalid_plan", "Object contains unknown field `answer`"),
    ]


async def test_a_hung_engine_request_ends_at_the_drain_deadline() -> None:
    scheduler, engine = Scheduler(capacity=1), ScriptedEngine(['{"claims": [{"claim": "chan'], hang=True)
    loop = asyncio.get_running_loop()
    running = asyncio.create_task(collect(engine, timeout_s=60, scheduler=scheduler))
    await asyncio.sleep(0.05)
    started = loop.time()
    scheduler.close(timeout_s=0.2)
    items = await running
    assert 0.2 <= loop.time() - started < 0.4
    assert items == [
        Outcome(text=None, reason=Reason(rule="engine_timeout", detail="shutdown"), plan=[], usage=None),
    ]
    await asyncio.sleep(0)  # the engine's task sees its cancellation
    assert engine.cancelled == ["r1"]


async def test_without_a_shutdown_the_engine_timeout_applies() -> None:
    items = await collect(ScriptedEngine(hang=True), timeout_s=0.05)
    assert items == [Outcome(text=None, reason=Reason(rule="engine_timeout"), plan=[], usage=None)]


async def test_the_prefilled_claims_are_said_before_the_engine_writes_and_a_full_plan_stops_it() -> None:
    """The required claims (the plan's prefilled beginning) are said before the engine is asked; the
    model's additions follow once checked; once the plan holds as many claims as a plan may, the engine
    is aborted and the answer served: nothing it writes after that could be said."""
    required = (Change(direction="up"), DriverClaim(n=1, direction="up"))
    check = PlanCheck(FACTS, "bill_change", required=required)
    prefill = '{"claims": [{"claim": "change", "direction": "up"}, {"claim": "driver", "n": 1, "direction": "up"}'
    more = ', {"claim": "minimum_due"}, {"claim": "period"}, {"claim": "new_balance"}, {"claim": "next_step", "a'
    engine = ScriptedEngine(pieces(more), hang=True)
    stream = generate(
        engine,
        GenerationRequest(request_id="r2", prompt="p" + prefill),
        check=check,
        realizer=Realizer(FACTS, "en"),
        timeout_s=5,
        stopwatch=Stopwatch(),
        prefill=prefill,
    )
    first = await anext(stream)
    assert isinstance(first, str)
    assert first.startswith(CHANGE)
    assert engine.cancelled == []  # the engine has been asked nothing yet
    items = [first, *[item async for item in stream]]
    outcome = items[-1]
    assert isinstance(outcome, Outcome)
    assert outcome.reason is None
    assert outcome.claims is not None
    assert [type(c.claim).__name__ for c in outcome.claims] == [
        "Change",
        "DriverClaim",
        "MinimumDue",
        "PeriodClaim",
    ]  # the new balance is the change's: not said twice
    assert len(outcome.plan or []) == check.limit == 5
    assert engine.aborted == ["r2"]
