"""Where the rules cannot decide what a question is about, the model chooses from the intent list
(a constrained choice, its time in the waterfall); a question the rules decide never asks it."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from litestar.testing import AsyncTestClient

from app.api.app import create_app
from app.prompts import render_intent_prompt
from bench.fakes.plans import plan
from bench.fakes.sglang_server import RunningFake, Script
from tests.chat_streams import ask, llm_settings, sse, token_for

CHOOSER = "You sort customers' questions"


def scripted(fake: RunningFake, choice: str) -> None:
    """The intent choice answers `choice`; a payment plan answers the payment question."""

    def pick(prompt: str) -> Script | None:
        if CHOOSER in prompt:
            return dataclasses.replace(fake.fake.default, text=json.dumps({"intent": choice}))
        if "START WITH: payment_status" in prompt:
            return dataclasses.replace(fake.fake.default, text=plan({"claim": "payment_status", "status": "unpaid"}))
        return None

    fake.fake.answer_for = pick


async def test_the_model_chooses_the_intent_the_rules_cannot(
    database_url: str, bank: Any, fake_sglang: RunningFake
) -> None:
    scripted(fake_sglang, "payment")
    async with AsyncTestClient(app=create_app(llm_settings(fake_sglang), database_url)) as client:
        token = await token_for(client, bank.key)
        r = await ask(client, token, question="hmm so what is going on with my card")
        stream = sse(r.text)
    final = next(data for name, data in stream if name == "final")
    assert final["intent"] == "payment"
    assert final["source"] == "model"
    assert final["timings_ms"]["intent"] > 0  # in the waterfall
    chooser = [r for r in fake_sglang.fake.requests if CHOOSER in r["text"]]
    assert len(chooser) == 1
    schema = json.loads(chooser[0]["sampling_params"]["json_schema"])
    assert schema["properties"]["intent"]["enum"] == [
        "bill_change",
        "charge",
        "fees_interest",
        "payment",
        "out_of_scope",
    ]
    assert chooser[0]["sampling_params"]["max_new_tokens"] == 16


async def test_a_question_the_rules_decide_never_asks_the_model_to_choose(
    database_url: str, bank: Any, fake_sglang: RunningFake
) -> None:
    scripted(fake_sglang, "out_of_scope")
    async with AsyncTestClient(app=create_app(llm_settings(fake_sglang), database_url)) as client:
        r = await ask(client, await token_for(client, bank.key), question="Did my payment arrive?")
    final = next(data for name, data in sse(r.text) if name == "final")
    assert final["intent"] == "payment"
    assert "intent" not in final["timings_ms"]
    assert [r for r in fake_sglang.fake.requests if CHOOSER in r["text"]] == []


def test_the_choice_prompt_is_static_up_to_the_question() -> None:
    one = render_intent_prompt("explain please", "chatml").split("<<<explain please>>>")
    two = render_intent_prompt("我想了解一下", "chatml").split("<<<我想了解一下>>>")
    assert one == two  # the same before the question (the engine's cached prefix) and after it
    assert len(one[0]) > 500
