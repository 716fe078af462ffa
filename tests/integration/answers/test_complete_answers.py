"""Complete by construction, through the service: a two-part question is answered whole, the claims
its answer must hold come first and are said before the engine has written anything, the JSON answer
carries each claim resolved, and a bank's own answer policy is followed and versioned. The engine is
the fake SGLang server (bench/fakes/sglang_server.py)."""

from __future__ import annotations

import asyncio
from typing import Any

from litestar.testing import AsyncTestClient

from app.api.app import create_app
from app.prompts import PROMPT_VERSION
from bench.fakes.plans import GOOD
from bench.fakes.sglang_server import RunningFake, Script
from tests.chat_streams import llm_settings, sse, token_for

TWO_PARTS = "Did my payment arrive, and why is my bill higher?"
STATUS = "The payment status of this statement: not paid yet, not overdue."
MINIMUM = "The minimum payment of 25.00 EUR is due on 25 November 2026."
ARRIVED = "Since the statement closed, nothing has reached us yet."
CHANGE = (
    "Your bill is 12.00 EUR higher than last month: the new balance is 124.99 EUR, against 112.99 EUR on your"
    " previous statement."
)
CAUSE = "The largest change is purchases at “City Gym”: 12.00 EUR more than on your previous statement."


async def explain(client: Any, key: str, question: str) -> Any:
    r = await client.post(
        "/v1/explanations",
        json={"account_ref": "A-1", "question": question, "as_of": "2026-11-10"},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert r.status_code == 200, r.text
    return r.json()


async def test_a_two_part_question_is_answered_whole_with_each_claim_resolved(
    database_url: str, bank: Any, fake_sglang: RunningFake
) -> None:
    fake_sglang.fake.default = Script(text=GOOD)  # a model that would only explain the change
    async with AsyncTestClient(app=create_app(llm_settings(fake_sglang), database_url)) as client:
        answer = await explain(client, bank.key, TWO_PARTS)
    assert answer["source"] == "model"
    assert answer["intent"] == "payment"
    assert answer["intents"] == ["payment", "bill_change"]
    assert answer["explanation"] == " ".join((STATUS, MINIMUM, ARRIVED, CHANGE, CAUSE))
    claims = answer["claims"]
    assert [c["claim"]["claim"] for c in claims] == [
        "payment_status",
        "minimum_due",
        "paid_since_close",
        "change",
        "driver",
    ]
    assert [c["text"] for c in claims] == [STATUS, MINIMUM, ARRIVED, CHANGE, CAUSE]
    assert claims[0]["values"] == {"status": "unpaid"}
    assert claims[1]["values"] == {"minimum_due": "25.00", "due_date": "2026-11-25"}
    assert claims[3]["values"] == {"difference": "12.00", "new_balance": "124.99", "previous_balance": "112.99"}
    assert claims[4]["values"] == {"driver_1": "City Gym", "driver_1_amount": "12.00"}
    # The model was handed the required claims as the plan's beginning, and wrote only its end.
    sent = fake_sglang.fake.requests[-1]
    assert sent["text"].endswith(
        '{"claim": "change", "direction": "up"}, {"claim": "driver", "n": 1, "direction": "up"}'
    )
    assert answer["usage"]["completion_tokens"] <= 3


async def test_the_first_words_need_no_token_from_the_engine(
    database_url: str, bank: Any, fake_sglang: RunningFake
) -> None:
    """The engine refuses the request: the required claims were said already, before it answered, and
    the deterministic answer replaces them (the plan never ended)."""
    fake_sglang.fake.default = Script(status=503)
    async with AsyncTestClient(app=create_app(llm_settings(fake_sglang), database_url)) as client:
        token = await token_for(client, bank.key)
        r = await client.post(
            "/v1/chat",
            json={"account_ref": "A-1", "question": "When do I have to pay and how much?", "as_of": "2026-11-10"},
            headers={"Authorization": f"Bearer {token}"},
        )
    stream = [(name, data) for name, data in sse(r.text) if name in ("delta", "replace", "final")]
    assert [name for name, _ in stream] == ["delta", "delta", "delta", "replace", "final"]  # a delta a claim
    still = "The amount still to pay is 124.99 EUR."  # "how much": the minimum, and all that is left
    assert [data["text"] for _, data in stream[:3]] == [STATUS, f" {MINIMUM}", f" {still}"]
    assert stream[3][1]["reason"].startswith("engine_error")
    assert stream[4][1]["source"] == "fallback"


async def test_a_banks_answer_policy_is_followed_and_versioned(
    database_url: str, bank: Any, fake_sglang: RunningFake, cli: Any
) -> None:
    rule = "payment:unpaid=payment_status,minimum_due,next_step"
    result = await asyncio.to_thread(cli, "tenants", "policy", bank.slug, "--answer", rule)  # its own loop
    assert result.exit_code == 0, result.output
    fake_sglang.fake.default = Script(text='{"claims": []}')  # a model that adds nothing
    async with AsyncTestClient(app=create_app(llm_settings(fake_sglang), database_url)) as client:
        answer = await explain(client, bank.key, "Is my payment late?")
    assert answer["source"] == "model"
    assert answer["explanation"] == f"{STATUS} {MINIMUM} You can make a payment any time in your online banking."
    assert answer["prompt_version"] != PROMPT_VERSION  # the bank's policy is part of the version


async def test_a_two_part_question_falls_back_to_both_parts(
    database_url: str, bank: Any, fake_sglang: RunningFake
) -> None:
    fake_sglang.fake.default = Script(status=503)  # the engine refuses: the deterministic answer
    async with AsyncTestClient(app=create_app(llm_settings(fake_sglang), database_url)) as client:
        answer = await explain(client, bank.key, TWO_PARTS)
    assert answer["source"] == "fallback"
    text = answer["explanation"]
    assert text.index("We have not received a payment") < text.index("That is 12.00 EUR more than the 112.99 EUR")
