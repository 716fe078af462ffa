"""The service behind SGLang's real model gateway (`smg` 1.13, a subprocess) in front of two fake SGLang
workers: answers and streams pass through, the priority reaches the worker, a tenant's requests
follow its prompt prefix to one worker, a hang-up or a failed claim stops the worker's
generation, and a stopped worker costs only the answers it was writing.

What smg does with the native API, as measured here: it proxies `POST /generate` (SSE included)
with `rid` and `priority` unchanged; it has no `/abort_request` (404), but it closes the worker's
connection when its client closes, and SGLang aborts a request whose client went away; a worker
that dies mid-stream ends the stream with `data: {"error": ...}` then `[DONE]`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar import Litestar
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.app import create_app
from app.inference.engine import Finished, GenerationRequest, TextDelta
from app.inference.sglang import SGLangEngine
from app.settings import Settings
from bench.fakes.plans import CHANGE_UP, DRIVER_1_UP, GOOD, GOOD_SHOWN, plan
from bench.fakes.sglang_server import FakeSGLang, RunningFake, Script, tokens
from tests.chat_streams import BAD, GOOD_DELTAS, sse, token_for
from tests.gateway import RunningGateway
from tests.servers import ThreadedServer
from tests.waiting import until

SECRET = "test-secret"
ANSWER = Script(text=GOOD)
QUESTION = "Why is my bill higher than last month?"
# A plan answers one intent: the other questions asked here get plans of their own (`answer_for`),
# written at the pace of the worker's default script.
PLANS = {
    "Did my payment arrive?": plan({"claim": "payment_status", "status": "unpaid"}, {"claim": "minimum_due"}),
    "What is the City Gym charge?": plan({"claim": "transaction", "n": 3}),  # FACTS number City Gym 3rd
}
# What would go on for long if nothing stopped it: a claim that never closes after the prefilled ones,
# and a plan whose repeats of a claim are left out, not refused.
ENDLESS = ', {"claim": "period"' + ', "note": 1' * 300
BAD_THEN_MORE = plan(*json.loads(BAD)["claims"], *[{"claim": "period"}] * 100)


@pytest.fixture
def workers() -> Iterator[list[RunningFake]]:
    pair = [RunningFake(), RunningFake()]
    for worker in pair:
        worker.fake.default = ANSWER
        worker.fake.answer_for = plan_for(worker.fake)
    yield pair
    for worker in pair:
        worker.stop()


@pytest.fixture
def gateway(workers: list[RunningFake], tmp_path: Path) -> Iterator[RunningGateway]:
    running = RunningGateway([w.url for w in workers], tmp_path / "smg.log")
    yield running
    running.stop()


def plan_for(fake: FakeSGLang) -> Callable[[str], Script | None]:
    """The plan for the question in the prompt, when it is not the bill-change one, as `fake`'s default
    script would write it (its pace, its hang); None: the default script."""

    def pick(prompt: str) -> Script | None:
        for question, written in PLANS.items():
            if f"<<<{question}>>>" in prompt:
                return dataclasses.replace(fake.default, text=written)
        return None

    return pick


def settings(gateway: RunningGateway) -> Settings:
    # No batch worker and no cache fill: each would send requests of its own through the gateway.
    engine = {"ENGINE": "sglang", "SGLANG_URL": gateway.url, "SGLANG_MODEL": "fake/model", "ENGINE_TIMEOUT_S": "5"}
    rest = {"BATCH_WORKER": "0", "ANSWER_CACHE_FILL": "0", "SESSION_SECRET": SECRET, "API_KEY_CACHE_TTL": "0"}
    return Settings.from_env(engine | rest)


@pytest.fixture
def app(database_url: str, gateway: RunningGateway) -> Litestar:
    return create_app(settings(gateway), database_url)


@pytest.fixture
async def service(app: Litestar) -> AsyncIterator[httpx.AsyncClient]:
    """The service on a real port: requests run side by side, as in production."""
    server = ThreadedServer(app)
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=20) as client:
            yield client
    finally:
        server.stop()


async def explain(client: Any, bank: Any, question: str = QUESTION, **extra: str) -> Any:
    r = await client.post(
        "/v1/explanations",
        json={"account_ref": "A-1", "question": question, "as_of": "2026-11-10", **extra},
        headers={"Authorization": f"Bearer {bank.key}"},
    )
    assert r.status_code == 200, r.text
    return r.json()


async def chat(client: Any, bank: Any, question: str = "Did my payment arrive?") -> Any:
    """The chat widget's stream; its final event."""
    token = await token_for(client, bank.key)
    r = await client.post(
        "/v1/chat",
        json={"account_ref": "A-1", "question": question, "as_of": "2026-11-10"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert r.status_code == 200, r.text
    return next(data for name, data in sse(r.text) if name == "final")


def rid(answer: dict[str, Any]) -> str:
    return str(answer["answer_id"]).replace("-", "")


def served_by(workers: list[RunningFake], request_id: str) -> int:
    """The index of the one worker that received the request."""
    holders = [i for i, w in enumerate(workers) if any(r.get("rid") == request_id for r in w.fake.requests)]
    assert len(holders) == 1, f"{request_id} reached workers {holders}"
    return holders[0]


async def home_workers(service: Any, first: Any, second: Any, workers: list[RunningFake]) -> tuple[int, int]:
    """Each tenant's prompt prefix gets its own worker, as under load: the second tenant's first
    request, a cache miss, arrives while the first's is still being written, and smg sends a cache
    miss to the least loaded worker (the first healthy one when loads are equal)."""
    for worker in workers:
        worker.fake.default = Script(text=ANSWER.text, hang_s=1.0)
    writing = asyncio.create_task(explain(service, first))
    await until("the first request at a worker", lambda: sum(len(w.fake.requests) for w in workers) == 1)
    other = served_by(workers, rid(await explain(service, second)))
    home = served_by(workers, rid(await writing))
    for worker in workers:
        worker.fake.default = ANSWER
    return home, other


async def audit(engine: AsyncEngine, answer: dict[str, Any]) -> Any:
    """The answer's audit row: (usage, fallback_reason)."""
    async with engine.connect() as conn:
        query = text("SELECT usage, fallback_reason FROM answers WHERE id = :i")
        return (await conn.execute(query, {"i": answer["answer_id"]})).one()


async def test_answers_and_streams_pass_through(service: Any, bank: Any, workers: list[RunningFake]) -> None:
    answer = await explain(service, bank)
    assert answer["source"] == "model"
    assert answer["explanation"] == GOOD_SHOWN
    assert answer["plan"] == [CHANGE_UP, DRIVER_1_UP]
    sent = workers[served_by(workers, rid(answer))].fake.requests[-1]
    assert sent["text"].startswith("<|im_start|>system\nYou plan the answers of")
    assert sent["sampling_params"]["ebnf"].startswith('root ::= ((", " b0c0)?')  # what follows the prefill

    token = await token_for(service, bank.key)
    r = await service.post(
        "/v1/chat",
        json={"account_ref": "A-1", "question": QUESTION, "as_of": "2026-11-10"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert r.status_code == 200
    stream = sse(r.text)
    assert [d["text"] for n, d in stream if n == "delta"] == GOOD_DELTAS  # claim by claim, as streamed
    assert [name for name, _ in stream][-2:] == ["final", "turn"]
    assert stream[-2][1]["source"] == "model"
    assert (await service.get("/ready")).json()["engine"] == "ok"  # smg answers /health


async def test_the_priority_reaches_the_worker(
    service: Any, bank: Any, make_bank: Any, workers: list[RunningFake]
) -> None:
    standard = await make_bank(priority_class="standard")
    widget = await chat(service, bank)
    api = await explain(service, bank)
    batch = await explain(service, bank, "What is the City Gym charge?", channel="batch")
    capped = await chat(service, standard)
    sent = {
        name: next(r["priority"] for w in workers for r in w.fake.requests if r["rid"] == rid(answer))
        for name, answer in [("widget", widget), ("api", api), ("batch", batch), ("capped", capped)]
    }
    # Levels widget 3, api 1, batch 0, spread x10 for SGLang's preemption threshold (app/domain/priority.py);
    # a standard tenant's widget request is capped at its class's level 2.
    assert sent == {"widget": 30, "api": 10, "batch": 0, "capped": 20}


async def test_a_tenants_requests_follow_its_prompt_prefix_to_one_worker(
    service: Any, make_bank: Any, workers: list[RunningFake]
) -> None:
    first, second = await make_bank(), await make_bank()
    home, other = await home_workers(service, first, second, workers)
    assert home != other
    # Each tenant asks twice in a row (round robin would alternate workers), about other intents:
    # the prompts share the tenant's static prefix, not their facts or question.
    later = [
        (bank, await explain(service, bank, question))
        for bank in (first, second, first, second)
        for question in ("Did my payment arrive?", "What is the City Gym charge?")
    ]
    assert [served_by(workers, rid(a)) for _, a in later] == [home, home, other, other] * 2
    # What that buys: each of them finds its tenant's static prefix in that worker's cache.
    for _, answer in later:
        assert answer["source"] == "model"
        assert answer["usage"]["cached_tokens"] > answer["usage"]["prompt_tokens"] // 2


async def test_an_abort_through_the_gateway_stops_the_worker(gateway: Any, workers: list[RunningFake]) -> None:
    """The engine contract's abort, through smg: it has no /abort_request, so the client hangs up."""
    for worker in workers:
        worker.fake.default = Script(text=" ".join(str(i) for i in range(2000)), token_delay_s=0.005)
    client = SGLangEngine(gateway.url, model="fake/model")
    req = GenerationRequest(request_id=uuid.uuid4().hex, prompt="Count from 1 to 1000.", max_tokens=1500)
    seen, final = "", None
    try:
        async for event in client.generate(req):
            if isinstance(event, TextDelta):
                seen += event.text
                if len(seen) > 10:
                    await client.abort(req.request_id)
            else:
                final = event
        async with httpx.AsyncClient() as http:
            assert (await http.post(f"{gateway.url}/abort_request", json={"rid": req.request_id})).status_code == 404
    finally:
        await client.close()
    assert isinstance(final, Finished)
    assert final.finish_reason == "abort"
    assert 0 < final.completion_tokens < 1500
    fake = workers[served_by(workers, req.request_id)].fake
    await until("the worker to see the disconnect", lambda: req.request_id in fake.disconnected)
    assert fake.aborted == set()  # the route never reached it: the disconnect did


async def test_a_customer_who_hangs_up_stops_the_worker(
    service: Any, app: Litestar, workers: list[RunningFake], bank: Any
) -> None:
    for worker in workers:
        worker.fake.default = Script(text=ENDLESS, token_delay_s=0.05)
    token = await token_for(service, bank.key)
    body = {"account_ref": "A-1", "question": QUESTION, "as_of": "2026-11-10"}
    async with service.stream("POST", "/v1/chat", json=body, headers={"Authorization": f"Bearer {token}"}) as r:
        seen = ""
        async for chunk in r.aiter_text():
            seen += chunk
            if "event: delta" in seen:  # the required claims are said, before the engine was asked:
                await until("the request at a worker", lambda: any(w.fake.requests for w in workers))
                break  # the model is writing: hang up
    (sent,) = [r["rid"] for w in workers for r in w.fake.requests]
    fake = workers[served_by(workers, sent)].fake
    # Written to the end, the answer would take 45 s and end without a disconnect.
    await until(
        "the worker disconnected and the slot free",
        lambda: sent in fake.disconnected and app.state.answers.scheduler.in_flight == 0,
    )


async def test_a_failed_claim_stops_the_worker_at_once(
    service: Any, bank: Any, workers: list[RunningFake], engine: AsyncEngine
) -> None:
    for worker in workers:
        worker.fake.default = Script(text=BAD_THEN_MORE, token_delay_s=0.01)
    final = await chat(service, bank, QUESTION)
    assert final["source"] == "fallback"
    fake = workers[served_by(workers, rid(final))].fake
    await until("the worker to see the disconnect", lambda: rid(final) in fake.disconnected)
    usage, reason = await audit(engine, final)
    assert reason.startswith("status_claim")
    assert usage is not None
    # The stream ended as aborted right away, with the tokens written so far (not after a wait for an
    # abort the gateway never passes on, with the usage unknown).
    assert 0 < usage["completion_tokens"] < len(tokens(BAD_THEN_MORE)) // 2


async def test_a_stopped_worker_costs_only_the_answers_it_was_writing(
    service: Any, make_bank: Any, workers: list[RunningFake], gateway: RunningGateway, engine: AsyncEngine
) -> None:
    first, second = await make_bank(), await make_bank()
    home, other = await home_workers(service, first, second, workers)  # the first tenant's will be stopped
    assert home != other
    for worker in workers:
        worker.fake.default = Script(text=ANSWER.text, hang_s=2.5)  # 2.5 s to the first token
    asking = [explain(service, bank, "Did my payment arrive?") for bank in (first, first, second)]
    in_flight = [asyncio.create_task(question) for question in asking]
    await until(
        "three requests at the home worker, two at the other",
        lambda: len(workers[home].fake.requests) == 3 and len(workers[other].fake.requests) == 2,
    )
    workers[home].kill()
    cut, cut_too, unaffected = await asyncio.gather(*in_flight)
    # The stopped worker's answers end as the deterministic answer, not an error; the other's is the model's.
    assert (cut["source"], cut_too["source"], unaffected["source"]) == ("fallback", "fallback", "model")
    assert cut["explanation"].startswith("Your statement for 1 October 2026 to 31 October 2026")
    for answer in (cut, cut_too):  # smg ends a stream its worker dropped with an error event
        assert (await audit(engine, answer))[1].startswith("engine_error")
    # Later requests of the first tenant go to the remaining worker, and are the model's answers.
    workers[other].fake.default = ANSWER
    for question in ["Why is my bill higher than last month?", "What is the City Gym charge?"]:
        later = await explain(service, first, question)
        assert later["source"] == "model"
        assert served_by(workers, rid(later)) == other
    # The gateway's health check has taken the stopped worker out of its routing too.
    await until(
        "the gateway to mark the stopped worker unhealthy",
        lambda: [w["is_healthy"] for w in gateway.workers() if w["url"] == workers[home].url] == [False],
    )
