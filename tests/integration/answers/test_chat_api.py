"""Customer sessions and the streaming chat API: token scope, event order, validation, shedding,
and a closed stream reaching the engine."""

from __future__ import annotations

import asyncio
import gc
import time
from datetime import date
from typing import Any

import httpx
import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from structlog.testing import capture_logs

from app.answers.messages import Ask
from app.answers.schemas import ExplanationRequest
from app.answers.service import AnswerService
from app.api.app import create_app
from app.data.driver_pool import DriverPool
from app.data.tenants import issue_api_key, principal_for, revoke_key, set_limits
from app.domain.priority import sglang_priority
from app.inference.scheduler import Scheduler
from app.security import CustomerClaims, issue_token, read_token
from bench.fakes.plans import CHANGE_UP, DRIVER_1_UP, GOOD, GOOD_SHOWN, plan
from bench.fakes.sglang_server import RunningFake, Script
from tests.chat_streams import BAD, GOOD_DELTAS, QUESTION, SECRET, ask, chat_settings, llm_settings, sse, token_for
from tests.factories import account, customer, document
from tests.servers import ThreadedServer
from tests.waiting import until

# Ann (C-1001, account A-1, the 12.00 gym story) and Bo (C-2002, accounts B-1 and B-2) at one bank.
pytestmark = pytest.mark.bank(customer(), customer("C-2002", accounts=[account("B-1"), account("B-2")]))
# A longer plan, for hanging up while the model still writes it.
LONG = plan(
    CHANGE_UP,
    DRIVER_1_UP,
    {"claim": "minimum_due"},
    {"claim": "period"},
    {"claim": "next_step", "action": "agent"},
)


@pytest.fixture
async def chat_client(database_url: str) -> Any:
    async with AsyncTestClient(app=create_app(chat_settings(), database_url)) as client:
        yield client


async def test_a_session_needs_the_tenants_key_and_its_customer(chat_client: Any, bank: Any) -> None:
    r = await chat_client.post("/v1/sessions", json={"customer_ref": "C-1001"})
    assert r.status_code == 401
    r = await chat_client.post(
        "/v1/sessions", json={"customer_ref": "C-9999"}, headers={"Authorization": f"Bearer {bank.key}"}
    )
    assert r.status_code == 404
    r = await chat_client.post(
        "/v1/sessions", json={"customer_ref": "C-1001"}, headers={"Authorization": f"Bearer {bank.key}"}
    )
    assert r.status_code == 201
    body = r.json()
    assert body["customer_ref"] == "C-1001"
    assert read_token(SECRET, body["token"]).expires == pytest.approx(time.time() + 900, abs=5)


async def test_the_stream_sends_facts_then_text_then_the_audited_answer(
    chat_client: Any, bank: Any, engine: AsyncEngine
) -> None:
    r = await ask(chat_client, await token_for(chat_client, bank.key))
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/event-stream")
    assert r.headers["cache-control"] == "no-store"
    stream = sse(r.text)
    # The conversation it starts, the facts, the text, the audited answer, the turn as recorded.
    assert [name for name, _ in stream] == ["conversation", "facts", "delta", "final", "turn"]
    facts, final = stream[1][1], stream[-2][1]
    assert facts["totals"] == {"current": "124.99", "previous": "112.99", "difference": "12.00"}
    assert facts["display"] == {
        "current": "124.99 EUR",
        "previous": "112.99 EUR",
        "difference": "+12.00 EUR",
        "minimum_due": "25.00 EUR",
        "due_date": "25 November 2026",
        "status": "not paid yet, not overdue",
        "drivers": [{"label": "purchases at “City Gym”", "amount": "12.00 EUR more than last month"}],
    }
    assert stream[2][1]["text"] == final["explanation"]
    assert final["source"] == "fallback"
    assert "12.00 EUR more" in final["explanation"]
    async with engine.connect() as conn:
        row = (
            await conn.execute(text("SELECT channel, source FROM answers WHERE id = :id"), {"id": final["answer_id"]})
        ).one()
    assert tuple(row) == ("widget", "fallback")


async def test_a_token_reads_its_own_customers_accounts_only(
    chat_client: Any, bank: Any, make_tenant: Any, load: Any
) -> None:
    other_bank = await make_tenant()
    await load(document(other_bank.slug, [customer(accounts=[account("Z-1")])]))
    token = await token_for(chat_client, bank.key)
    # Bo's account at the same bank, and an account of another bank's C-1001: both unknown to Ann.
    for ref in ("B-1", "Z-1", "NOPE"):
        r = await ask(chat_client, token, ref)
        assert r.status_code == 404, ref
        assert r.json()["message"] == f"account '{ref}' not found"
    r = await chat_client.get("/v1/chat/accounts", headers={"Authorization": f"Bearer {token}"})
    assert [a["account_ref"] for a in r.json()] == ["A-1"]
    bo = await token_for(chat_client, bank.key, "C-2002")
    r = await chat_client.get("/v1/chat/accounts", headers={"Authorization": f"Bearer {bo}"})
    assert [a["account_ref"] for a in r.json()] == ["B-1", "B-2"]
    # The API key itself is not a session token, and a token is not an API key.
    assert (await ask(chat_client, bank.key)).status_code == 401
    r = await chat_client.post(
        "/v1/explanations",
        json={"account_ref": "A-1", "question": QUESTION},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert r.status_code == 401


async def test_expired_and_forged_tokens_are_refused(chat_client: Any, bank: Any) -> None:
    expired = issue_token(
        SECRET, CustomerClaims(tenant_id=bank.id, key_id=1, customer_ref="C-1001", expires=int(time.time()) - 1)
    )
    r = await ask(chat_client, expired)
    assert r.status_code == 401
    assert "expired" in r.json()["message"]
    forged = issue_token(
        "guessed", CustomerClaims(tenant_id=bank.id, key_id=1, customer_ref="C-1001", expires=int(time.time()) + 60)
    )
    assert (await ask(chat_client, forged)).status_code == 401
    assert (await ask(chat_client, "not-a-token")).status_code == 401


async def accounts(client: Any, token: str) -> Any:
    return await client.get("/v1/chat/accounts", headers={"Authorization": f"Bearer {token}"})


async def test_a_token_dies_with_the_key_that_issued_it(chat_client: Any, bank: Any, engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        other_key = await issue_api_key(conn, bank.id, "other")
    token = await token_for(chat_client, bank.key)
    other = await token_for(chat_client, other_key)
    assert read_token(SECRET, token).key_id != read_token(SECRET, other).key_id
    assert (await accounts(chat_client, token)).status_code == 200

    async with engine.begin() as conn:
        await revoke_key(conn, bank.id, bank.key[:10])  # API_KEY_CACHE_TTL=0: refused at once
    r = await accounts(chat_client, token)
    assert r.status_code == 401
    assert r.json() == {"status": 401, "error": "unauthorized", "message": "the session token is not valid"}
    assert r.headers["www-authenticate"] == 'Bearer realm="bill-assistant-chat"'
    # The key is refused too, and the tenant's other key and its tokens are not touched.
    assert (await token_for_status(chat_client, bank.key)) == 401
    assert [a["account_ref"] for a in (await accounts(chat_client, other)).json()] == ["A-1"]


async def token_for_status(client: Any, key: str) -> int:
    r = await client.post("/v1/sessions", json={"customer_ref": "C-1001"}, headers={"Authorization": f"Bearer {key}"})
    return int(r.status_code)


async def test_a_validated_model_answer_streams_in_pieces(
    database_url: str, bank: Any, fake_sglang: RunningFake
) -> None:
    fake_sglang.fake.default = Script(text=GOOD)
    async with AsyncTestClient(app=create_app(llm_settings(fake_sglang), database_url)) as client:
        r = await ask(client, await token_for(client, bank.key))
    stream = sse(r.text)
    names = [name for name, _ in stream]
    assert names[:2] == ["conversation", "facts"]
    assert names[-2:] == ["final", "turn"]
    assert "replace" not in names
    deltas = [data["text"] for name, data in stream if name == "delta"]
    assert deltas == GOOD_DELTAS  # claim by claim, each said once the plan held it
    assert "".join(deltas) == GOOD_SHOWN == stream[-2][1]["explanation"]
    assert stream[-2][1]["source"] == "model"
    assert stream[-2][1]["plan"] == [CHANGE_UP, DRIVER_1_UP]
    assert fake_sglang.fake.requests[-1]["priority"] == sglang_priority(
        3
    )  # the widget channel of an interactive tenant


async def test_an_answer_that_fails_validation_is_replaced(
    database_url: str, bank: Any, fake_sglang: RunningFake
) -> None:
    fake_sglang.fake.default = Script(text=BAD)
    async with AsyncTestClient(app=create_app(llm_settings(fake_sglang), database_url)) as client:
        r = await ask(client, await token_for(client, bank.key))
    stream = sse(r.text)
    names = [name for name, _ in stream]
    assert names[:2] == ["conversation", "facts"]
    assert names[-3:] == ["replace", "final", "turn"]
    # Only the claims before the contradiction were said; "paid" never left the server...
    assert [d["text"] for n, d in stream if n == "delta"] == GOOD_DELTAS
    assert "payment status" not in r.text
    replace, final = stream[-3][1], stream[-2][1]
    assert replace["reason"] == 'status_claim:status_said {"claimed_status":"paid","status":"unpaid"}'
    assert "why" not in replace  # the console's words are the console's stream's alone
    assert replace["text"] == final["explanation"]  # ...and the deterministic answer replaces the first
    assert final["source"] == "fallback"
    assert final["explanation"].startswith("Your statement for 1 October 2026 to 31 October 2026")


async def test_shedding_is_an_http_status_before_the_stream(chat_client: Any, bank: Any, engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await set_limits(conn, bank.slug, {"rate_limit_per_s": 0.001})  # a burst of one, then 429
    token = await token_for(chat_client, bank.key)
    assert (await ask(chat_client, token)).status_code == 200
    r = await ask(chat_client, token)
    assert r.status_code == 429
    assert int(r.headers["retry-after"]) > 1
    assert r.json()["error"] == "rate_limited"


async def test_closing_the_stream_aborts_the_engine_request(
    database_url: str, bank: Any, fake_sglang: RunningFake
) -> None:
    fake_sglang.fake.default = Script(text=LONG, token_delay_s=0.05)
    app = create_app(llm_settings(fake_sglang), database_url)
    server = ThreadedServer(app)
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
            token = await token_for(client, bank.key)
            body = {"account_ref": "A-1", "question": QUESTION, "as_of": "2026-11-10"}
            headers = {"Authorization": f"Bearer {token}"}
            async with client.stream("POST", "/v1/chat", json=body, headers=headers) as r:
                seen = ""
                async for chunk in r.aiter_text():
                    seen += chunk
                    if "event: delta" in seen:  # the required claims are said, before the engine was asked:
                        await until("the request at the engine", lambda: bool(fake_sglang.fake.requests))
                        break  # the model is writing: hang up
        rid = fake_sglang.fake.requests[-1]["rid"]
        await until(
            "the engine's abort and the admission slot free again",
            lambda: rid in fake_sglang.fake.aborted and app.state.answers.scheduler.in_flight == 0,
        )
    finally:
        server.stop()


async def test_a_stream_that_never_starts_still_frees_its_admission_slot(engine: AsyncEngine, bank: Any) -> None:
    async with engine.connect() as conn:
        principal = await principal_for(conn, bank.id)
    assert principal is not None
    scheduler = Scheduler(capacity=1)
    pool = DriverPool(engine.url.render_as_string(hide_password=False), size=2)
    answers = AnswerService(db=engine, pool=pool, llm=None, scheduler=scheduler, settings=chat_settings())
    ask = Ask(
        principal=principal,
        request=ExplanationRequest(account_ref="A-1", question=QUESTION),
        channel="widget",
        customer_ref="C-1001",
        today=date(2026, 11, 10),
    )
    events_ = answers.converse(ask)
    await anext(events_)  # admitted, facts sent: the handler's part
    assert scheduler.in_flight == 1
    del events_  # the response is dropped before its body is sent
    gc.collect()
    for _ in range(10):
        await asyncio.sleep(0)
    assert scheduler.in_flight == 0
    await pool.close()


@pytest.mark.parametrize("log_questions", ["0", "1"])
async def test_one_log_event_per_stream_without_the_token(database_url: str, bank: Any, log_questions: str) -> None:
    async with AsyncTestClient(app=create_app(chat_settings(LOG_QUESTIONS=log_questions), database_url)) as client:
        token = await token_for(client, bank.key)
        with capture_logs() as logs:
            r = await ask(client, token, question="Why is my bill higher? My PIN is 4821")
    assert r.status_code == 200
    [event] = [e for e in logs if e.get("event") == "request"]
    assert (event["route"], event["status"], event["tenant"]) == ("/v1/chat", 200, bank.slug)
    # The bill question is answered; the PIN that came with it is data, never logged unless asked.
    assert (event["intent"], event["source"]) == ("bill_change", "fallback")
    assert token not in str(logs)
    assert ("4821" in str(logs)) == (log_questions == "1")
