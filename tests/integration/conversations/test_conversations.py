"""The widget's conversations through the real app and Postgres (ENGINE=off: the deterministic
answers): follow-ups take their subject from the turn before, an ambiguous one is asked back, the
answer is in the question's language, a customer who asks for a person waits for one, and nobody
else ever reads the conversation."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.app import create_app
from app.data import conversations, handovers
from app.data.agents import create_agent
from app.data.database import autocommit
from bench.fakes.plans import GOOD
from bench.fakes.sglang_server import RunningFake, Script
from tests.chat_streams import chat_settings, llm_settings, sse, token_for
from tests.factories import OCT, SEPT, account, customer, tx
from tests.metrics import sample
from tests.servers import ThreadedServer

AS_OF = "2026-11-10"
# October has two cafes the customer may mean by "the cafe one".
CAFES = [
    tx("T-1", "2026-09-03", "purchase", "100.00", "FreshMart"),
    tx("T-2", "2026-10-03", "purchase", "100.00", "FreshMart"),
    tx("T-3", "2026-10-05", "purchase", "4.50", "Blue Cafe"),
    tx("T-4", "2026-10-06", "purchase", "6.20", "Cafe Nero"),
]
# Ann (C-1001, A-1: the 12.00 City Gym story) and Bo (C-2002, B-1: two cafes) at one bank.
pytestmark = pytest.mark.bank(
    customer(), customer("C-2002", accounts=[account("B-1", statements=[SEPT, OCT], transactions=CAFES)])
)


@pytest.fixture
async def client(database_url: str) -> Any:
    async with AsyncTestClient(app=create_app(chat_settings(), database_url)) as client:
        yield client


class Widget:
    """One customer's widget: a token and the conversation it continues."""

    def __init__(self, client: Any, token: str, account_ref: str = "A-1") -> None:
        self.client, self.token, self.account_ref = client, token, account_ref
        self.conversation_id: str | None = None

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    async def say(self, question: str, **extra: Any) -> dict[str, Any]:
        """The turn's events by name (the last of each)."""
        body = {"account_ref": self.account_ref, "question": question, "as_of": AS_OF, **extra}
        if self.conversation_id:
            body["conversation_id"] = self.conversation_id
        r = await self.client.post("/v1/chat", json=body, headers=self.auth)
        assert r.status_code == 200, r.text
        stream = sse(r.text)
        assert stream[0][0] == "conversation"
        self.conversation_id = stream[0][1]["conversation_id"]
        return {name: data for name, data in stream} | {"names": [name for name, _ in stream]}

    async def transcript(self) -> Any:
        return await self.client.get(f"/v1/chat/conversations/{self.conversation_id}", headers=self.auth)


async def widget(client: Any, bank: Any, customer_ref: str = "C-1001", account_ref: str = "A-1") -> Widget:
    return Widget(client, await token_for(client, bank.key, customer_ref), account_ref)


async def test_a_conversation_is_recorded_turn_by_turn_and_restored(client: Any, bank: Any) -> None:
    ann = await widget(client, bank)
    first = await ann.say("Why is my bill higher than last month?")
    assert first["names"] == ["conversation", "facts", "delta", "final", "turn"]
    assert first["conversation"]["status"] == "bot"
    assert first["turn"] == {"customer_seq": 1, "assistant_seq": 2, "status": "bot"}
    second = await ann.say("When is it due?")
    assert second["conversation"]["conversation_id"] == first["conversation"]["conversation_id"]
    assert second["turn"]["customer_seq"] == 3

    r = await ann.transcript()
    assert r.status_code == 200
    body = r.json()
    assert [(m["seq"], m["role"]) for m in body["messages"]] == [
        (1, "customer"), (2, "assistant"), (3, "customer"), (4, "assistant")
    ]  # fmt: skip
    assert body["messages"][0]["text"] == "Why is my bill higher than last month?"
    assert body["messages"][1]["text"] == first["final"]["explanation"]
    assert body["messages"][1]["answer_id"] == first["final"]["answer_id"]
    assert body["messages"][1]["facts"]["display"]["difference"] == "+12.00 EUR"  # the facts beside the answer
    assert second["final"]["intent"] == "payment"


async def test_a_follow_up_takes_its_intent_and_subject_from_the_turn_before(client: Any, bank: Any) -> None:
    ann = await widget(client, bank)
    await ann.say("Why is my bill higher than last month?")
    why = await ann.say("And why?")
    assert why["final"]["intent"] == "bill_change"
    assert why["final"]["explanation"].startswith("About the change in your bill: ")
    assert "City Gym" in why["final"]["explanation"]
    gym = await ann.say("the gym one?")
    assert gym["final"]["intent"] == "charge"
    assert gym["final"]["subjects"] == ["City Gym"]
    assert gym["final"]["explanation"].startswith("About “City Gym”: ")
    assert "12.00" in gym["final"]["explanation"]


async def test_the_answer_is_in_the_questions_language(client: Any, bank: Any) -> None:
    ann = await widget(client, bank)  # an English customer on an English page
    turn = await ann.say("为什么这个月的账单比上个月高？", locale="en")
    assert turn["final"]["locale"] == "zh-CN"
    assert "12.00" in turn["final"]["explanation"]
    assert "账单" in turn["final"]["explanation"]
    bare = await ann.say("A-1", locale="en")  # says nothing about its language: the page's
    assert bare["final"]["locale"] == "en"


async def test_an_ambiguous_subject_is_asked_back_with_choices(client: Any, bank: Any) -> None:
    bo = await widget(client, bank, "C-2002", "B-1")
    asked = await bo.say("what is the cafe one?")
    assert asked["final"]["choices"] == ["Blue Cafe", "Cafe Nero"]
    assert asked["final"]["explanation"] == "Which one do you mean: “Blue Cafe” or “Cafe Nero”?"
    answered = await bo.say("Cafe Nero")
    assert answered["final"]["subjects"] == ["Cafe Nero"]
    assert "6.20" in answered["final"]["explanation"]
    assert "4.50" not in answered["final"]["explanation"]


async def test_asking_for_a_person_hands_over_and_an_agent_answers(
    client: Any, bank: Any, engine: AsyncEngine, database_url: str
) -> None:
    labels = {"tenant": bank.slug, "reason": "requested"}
    requested = sample("bill_assistant_handovers_total", labels)
    ann = await widget(client, bank)
    await ann.say("Why is my bill higher than last month?")
    handed = await ann.say("I want to speak to a human")
    assert handed["final"]["handover"] == "requested"
    assert "agent" in handed["final"]["explanation"]
    assert handed["turn"]["status"] == "waiting"
    assert sample("bill_assistant_handovers_total", labels) == requested + 1

    # While a person answers, the customer's messages are theirs: no assistant answer.
    waiting = await ann.say("My card was charged twice")
    assert waiting["names"] == ["conversation", "turn"]
    assert waiting["turn"] == {"customer_seq": 5, "status": "waiting"}

    cid = uuid.UUID(ann.conversation_id)
    async with autocommit(engine) as conn:
        assert [w.id for w in await handovers.queue(conn, bank.id)] == [cid]
        agent = await create_agent(conn, bank.id, "ana", "Ana Agent", "a long enough password 1")
        assert await handovers.take(conn, bank.id, cid, agent) is not None
        await conversations.append(conn, bank.id, cid, "agent", "Hello Ann, let me look at it.", agent_id=agent)

    # The feed through a real server: a closed connection ends it (the in-process client keeps it open).
    server = ThreadedServer(create_app(chat_settings(), database_url))

    async def feed() -> list[tuple[str, Any]]:
        got: list[tuple[str, Any]] = []
        url = f"{server.url}/v1/chat/conversations/{cid}/events?after=5"
        async with httpx.AsyncClient() as http, http.stream("GET", url, headers=ann.auth) as r:
            assert r.status_code == 200
            buffer = ""
            async for chunk in r.aiter_text():
                buffer += chunk.replace("\r\n", "\n")
                got = sse(buffer[: buffer.rfind("\n\n") + 2])
                if any(name == "message" for name, _ in got):
                    return got
        return got

    try:
        got = await asyncio.wait_for(feed(), 10)
    finally:
        server.stop()
    assert got[0] == ("status", {"status": "agent", "agent_name": "Ana Agent", "agent_writing": False})
    assert got[1][1]["role"] == "agent"
    assert got[1][1]["text"] == "Hello Ann, let me look at it."
    assert got[1][1]["agent_name"] == "Ana Agent"


async def test_two_unanswerable_questions_in_a_row_hand_over(client: Any, bank: Any) -> None:
    ann = await widget(client, bank)
    first = await ann.say("blorp zzz")
    assert first["final"]["intent"] == "out_of_scope"
    assert first["turn"]["status"] == "bot"
    second = await ann.say("qwerty asdf")
    assert second["final"]["handover"] == "fallbacks"
    assert second["turn"]["status"] == "waiting"


async def test_a_need_only_a_person_serves_hands_over_at_once(client: Any, bank: Any) -> None:
    ann = await widget(client, bank)
    turn = await ann.say("Can you raise my credit limit?")
    assert turn["final"]["handover"] == "out_of_scope"
    assert turn["turn"]["status"] == "waiting"


async def test_nobody_else_reads_or_continues_a_conversation(client: Any, bank: Any, make_tenant: Any) -> None:
    ann = await widget(client, bank)
    await ann.say("Why is my bill higher than last month?")
    bo = await widget(client, bank, "C-2002", "B-1")
    path = f"/v1/chat/conversations/{ann.conversation_id}"
    assert (await client.get(path, headers=bo.auth)).status_code == 404
    assert (await client.get(f"{path}/events", headers=bo.auth)).status_code == 404
    r = await client.post(
        "/v1/chat",
        json={"account_ref": "B-1", "question": "And why?", "conversation_id": ann.conversation_id},
        headers=bo.auth,
    )
    assert r.status_code == 404
    assert (await ann.transcript()).status_code == 200


async def test_conversations_past_the_retention_are_purged(
    client: Any, bank: Any, engine: AsyncEngine, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, recent = await widget(client, bank), await widget(client, bank, "C-2002", "B-1")
    await old.say("Why is my bill higher than last month?")
    await recent.say("Why is my bill higher than last month?")
    async with autocommit(engine) as conn:  # Ann's last message was 31 days ago
        await conn.execute(
            text("UPDATE conversations SET updated_at = now() - interval '31 days' WHERE id = :id"),
            {"id": uuid.UUID(old.conversation_id)},
        )
    monkeypatch.setenv("CONVERSATION_RETENTION_DAYS", "30")
    result = await asyncio.to_thread(cli, "conversations", "purge")  # the command runs its own loop
    assert result.exit_code == 0, result.output
    assert "deleted 1 conversations with no message for 30 days" in result.output
    assert (await old.transcript()).status_code == 404
    assert len((await recent.transcript()).json()["messages"]) == 2


async def test_a_follow_ups_prompt_holds_the_question_before_after_the_facts(
    database_url: str, bank: Any, fake_sglang: RunningFake
) -> None:
    fake_sglang.fake.default = Script(text=GOOD)
    async with AsyncTestClient(app=create_app(llm_settings(fake_sglang), database_url)) as llm:
        ann = await widget(llm, bank)
        await ann.say("Why is my bill higher than last month?")
        why = await ann.say("And why?")
    assert why["final"]["source"] == "model"
    # The follow-up adds: not the change and its cause again, the line behind the cause.
    assert why["final"]["explanation"] == (
        "About the change in your bill: On 12 October 2026, your statement shows a purchase at “City Gym” of 12.00 EUR."
    )
    first, second = (r["text"] for r in fake_sglang.fake.requests)
    assert "PREVIOUS QUESTION" not in first
    facts_at = second.index("FACTS\n")
    assert second.index("PREVIOUS QUESTION\n<<<Why is my bill higher than last month?>>>") > facts_at
    # The claims the service requires (the line behind the cause) begin the plan the model continues.
    assert second.endswith(
        'QUESTION\n<<<And why?>>><|im_end|>\n<|im_start|>assistant{"claims": [{"claim": "transaction", "n": 3}'
    )
