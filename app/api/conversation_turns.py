"""A widget conversation's turns in Postgres: the thread a question continues, and the customer's
question with the assistant's answer recorded once the answer is audited (a handover with them)."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any

import msgspec
import structlog
from litestar.response import ServerSentEventMessage
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.answers.schemas import ExplanationResponse
from app.api.conversation_feed import Wakeups
from app.api.event_stream import chat_facts
from app.data import conversations, turns
from app.data.database import connection
from app.data.tenants import Principal
from app.domain.claims import AnyClaim, Claim
from app.domain.conversation import Thread, statement_key
from app.domain.plan import same_claim
from app.domain.understanding import Context
from app.domain.vocabulary import ConversationStatus, Locale
from app.errors import DatabaseUnavailable
from app.metrics import HANDOVERS_BY
from app.prompts import render_notice

log = structlog.get_logger("bill_assistant.conversations")
# A turn's write is tried again after these pauses (a database that drops connections, a failover);
# then the customer is told, and its audit row is noted within NOTE_FOR_S, tried every NOTE_EVERY_S.
RETRY_PAUSES_S = (0.25, 0.5, 1.0)
NOTE_FOR_S, NOTE_EVERY_S = 600.0, 1.0
_NOTING: set[asyncio.Task[None]] = set()  # the notes still to write (a task must be held to run)


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
    facts and what it was taken to be about), and the handover it asks for; in one transaction.

    The answer has been streamed by then, so a turn that cannot be written is never a stream that just
    ends: the write is tried again while the database comes back (RETRY_PAUSES_S), and if it still
    cannot be, the stream ends with an `error` event the widget shows ("may not have been saved"), and
    the answer's audit row says so once the database answers (`answer.turn.recorded: false`)."""

    db: AsyncEngine
    wakeups: Wakeups
    conversation_id: uuid.UUID
    new: bool  # the conversation's first turn: its row is written with it
    seen: int  # the conversation's last message when the question came (0: new)
    audit_id: uuid.UUID  # this request's audit row
    principal: Principal
    customer_ref: str
    question: str
    account_ref: str
    locale: Locale
    thread: Thread

    async def record(self, answer: ExplanationResponse) -> list[ServerSentEventMessage]:
        for attempt, pause in enumerate((*RETRY_PAUSES_S, None)):
            try:
                turn = await self._write(answer, retry=attempt > 0)
            except DatabaseUnavailable:
                if pause is None:
                    break
                await asyncio.sleep(pause)
            except Exception:
                log.exception("turn not recorded", conversation_id=str(self.conversation_id))
                break
            else:
                self.wakeups.wake(self.conversation_id)
                return [ServerSentEventMessage(msgspec.json.encode(turn).decode(), event="turn")]
        log.error("turn not recorded", conversation_id=str(self.conversation_id), answer_id=answer.answer_id)
        task = asyncio.get_running_loop().create_task(self._note(uuid.UUID(answer.answer_id)))
        _NOTING.add(task)
        task.add_done_callback(_NOTING.discard)
        told = {"error": "turn_not_saved", "message": render_notice("not_saved", answer.locale)}
        return [ServerSentEventMessage(msgspec.json.encode(told).decode(), event="error")]

    async def _write(self, answer: ExplanationResponse, *, retry: bool) -> dict[str, Any]:
        cid, answer_id = self.conversation_id, uuid.UUID(answer.answer_id)
        status: ConversationStatus = "bot"
        async with connection(self.db, transaction=True) as conn:
            # A try whose commit was made but not acknowledged: the turn is there already.
            if retry and (done := await turns.recorded(conn, cid, answer_id, self.seen)) is not None:
                return done
            if self.new:
                await conversations.start(conn, cid, self.principal.tenant_id, self.customer_ref, self.locale)
            asked = await conversations.append(conn, cid, "customer", self.question, account_ref=self.account_ref)
            answered = await conversations.append(
                conn,
                cid,
                "assistant",
                answer.explanation,
                account_ref=answer.account_ref,
                answer_id=answer_id,
                facts=chat_facts(answer),
                context=_stored(answer, self.question, self.thread),
                choices=answer.choices,
            )
            if answer.handover is not None and await conversations.hand_over(conn, cid, answer.handover):
                status = "waiting"
                HANDOVERS_BY(self.principal.tenant_slug, answer.handover).inc()
        return {"customer_seq": asked, "assistant_seq": answered, "status": status}

    async def _note(self, answer_id: uuid.UUID) -> None:
        """The audit row says the turn was not recorded, as soon as the database answers again."""
        loop = asyncio.get_running_loop()
        until, cid = loop.time() + NOTE_FOR_S, self.conversation_id
        while True:
            try:
                async with connection(self.db, transaction=True) as conn:
                    noted = await turns.note_unrecorded(conn, self.audit_id, cid, answer_id, self.seen)
            except DatabaseUnavailable:
                if loop.time() > until:
                    log.error("turn not recorded, and not noted in its audit row", audit_id=str(self.audit_id))
                    return
                await asyncio.sleep(NOTE_EVERY_S)
            else:
                log.warning(
                    "turn not recorded: noted in its audit row" if noted else "turn recorded after all",
                    audit_id=str(self.audit_id),
                    conversation_id=str(cid),
                )
                return
