"""A widget conversation's turns in Postgres: the thread a question continues, and the customer's
question with the assistant's answer recorded once the answer is audited (a handover with them)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import msgspec
from litestar.response import ServerSentEventMessage
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.answers.schemas import ExplanationResponse
from app.api.conversation_feed import Wakeups
from app.api.event_stream import chat_facts
from app.data import conversations
from app.data.tenants import Principal
from app.domain.claims import AnyClaim, Claim
from app.domain.conversation import Thread, statement_key
from app.domain.plan import same_claim
from app.domain.understanding import Context
from app.domain.vocabulary import ConversationStatus, Locale
from app.metrics import HANDOVERS_BY


class ConversationOut(msgspec.Struct, frozen=True, kw_only=True):
    conversation_id: uuid.UUID
    status: ConversationStatus
    agent_name: str | None
    messages: list[conversations.Message]  # the latest page (PAGE), or the one before `?before=`
    earlier: int | None  # `?before=` for the page before this one; null: this page begins the conversation


async def thread_of(conn: AsyncConnection, conversation_id: uuid.UUID) -> Thread:
    """What the conversation's latest assistant turn hands the next question."""
    stored = await conversations.last_context(conn, conversation_id)
    if stored is None:
        return Thread(context=None, previous_question=None, unanswered=False)
    context = None
    if stored["intent"] is not None:
        context = Context(intent=stored["intent"], subjects=tuple(stored["subjects"]), locale=stored["locale"])
    said = tuple(msgspec.convert(c, AnyClaim) for c in stored.get("said", []))
    return Thread(
        context=context,
        previous_question=stored["question"],
        unanswered=stored["unanswered"],
        said=said,
        said_about=stored.get("said_about"),
    )


def _stored(answer: ExplanationResponse, question: str, thread: Thread) -> dict[str, Any]:
    """The context the next follow-up continues: this turn's, or, after a polite refusal, the turn
    before's (a refusal is about nothing)."""
    refused = answer.intent == "out_of_scope" and answer.handover is None
    if refused:
        before = thread.context
        intent, subjects = (before.intent, list(before.subjects)) if before else (None, [])
    else:  # a follow-up goes on from the last part of a multi-part question ("…, and why is it higher?")
        intent, subjects = (answer.intents or [answer.intent])[-1], answer.subjects or []
    # What was said about this statement, so that a follow-up adds to it (app/domain/answer_policy.py).
    about = statement_key(answer.account_ref, answer.statement.period_end)
    said: list[Claim] = [c.claim for c in answer.claims or []]
    if thread.said_about == about:
        said = [*thread.said, *(c for c in said if not any(same_claim(c, s) for s in thread.said))]
    return {
        "intent": intent,
        "subjects": subjects,
        "locale": answer.locale,
        "question": question,
        "unanswered": refused,
        "said": msgspec.to_builtins(said),
        "said_about": about,
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class Recorder:
    """Records one turn once its answer is audited: the customer's question and the answer (with its
    facts and what it was taken to be about), and the handover it asks for; in one transaction."""

    db: AsyncEngine
    wakeups: Wakeups
    conversation_id: uuid.UUID
    new: bool  # the conversation's first turn: its row is written with it
    principal: Principal
    customer_ref: str
    question: str
    account_ref: str
    locale: Locale
    thread: Thread

    async def record(self, answer: ExplanationResponse) -> list[ServerSentEventMessage]:
        cid = self.conversation_id
        status: ConversationStatus = "bot"
        async with self.db.begin() as conn:
            if self.new:
                await conversations.start(conn, cid, self.principal.tenant_id, self.customer_ref, self.locale)
            asked = await conversations.append(conn, cid, "customer", self.question, account_ref=self.account_ref)
            answered = await conversations.append(
                conn,
                cid,
                "assistant",
                answer.explanation,
                account_ref=answer.account_ref,
                answer_id=uuid.UUID(answer.answer_id),
                facts=chat_facts(answer),
                context=_stored(answer, self.question, self.thread),
                choices=answer.choices,
            )
            if answer.handover is not None and await conversations.hand_over(conn, cid, answer.handover):
                status = "waiting"
                HANDOVERS_BY(self.principal.tenant_slug, answer.handover).inc()
        self.wakeups.wake(cid)
        turn = {"customer_seq": asked, "assistant_seq": answered, "status": status}
        return [ServerSentEventMessage(msgspec.json.encode(turn).decode(), event="turn")]
