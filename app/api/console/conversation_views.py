"""What the console shows of the widget's conversations: the queue's rows and a conversation's
transcript, written out for people. The JSON rows feed the queue page's script (app/web/static/console.js).
Times are UTC, said so; each customer's and assistant's words carry the language they were in."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import msgspec

from app.api.console.words import language, say, words
from app.conversations.values import Agent, Conversation, Message
from app.data.agents import ConsoleSession
from app.data.audit import AnswerRecord
from app.data.handovers import Waiting


def agent_of(session: ConsoleSession) -> Agent:
    me = session.identity
    return Agent(tenant_id=me.tenant_id, tenant_slug=me.tenant_slug, agent_id=me.agent_id, display_name=me.display_name)


def waited(seconds: float) -> str:
    """A wait as people say it (console.js writes the ticking one the same way)."""
    s, said = max(0, int(seconds)), words()["time"]
    if s < 60:
        return say(said["seconds"], s=s)
    if s < 3600:
        return say(said["minutes"], m=s // 60, s=f"{s % 60:02d}")
    return say(said["hours"], h=s // 3600, m=f"{s % 3600 // 60:02d}")


def clock(moment: datetime) -> str:
    return moment.strftime("%H:%M:%S")


def utc(time: str) -> str:
    """A time, said to be UTC (the console's times all are)."""
    return say(words()["time"]["utc"], time=time)


def moment(at: datetime) -> str:
    return utc(at.strftime("%Y-%m-%d %H:%M:%S"))


def short_id(cid: uuid.UUID) -> str:
    return cid.hex[:8]


class QueueRow(msgspec.Struct, frozen=True, kw_only=True):
    id: uuid.UUID
    short: str  # the id's first characters: two conversations started in the same second still differ
    customer_ref: str
    reason: str
    locale: str  # the conversation's language: the `lang` of the customer's words
    language: str  # …written out
    started_at: datetime
    started: str  # when the conversation began, which tells two of one customer's apart
    waiting_s: float
    waited: str
    first_question: str
    last_text: str
    last_at: datetime | None
    last: str  # when the customer wrote last
    url: str


def queue_rows(waiting: list[Waiting]) -> list[QueueRow]:
    return [
        QueueRow(
            id=w.id,
            short=short_id(w.id),
            customer_ref=w.customer_ref,
            reason=words()["handover_reason"][w.handover_reason],
            locale=w.locale,
            language=language(w.locale),
            started_at=w.started_at,
            started=moment(w.started_at),
            waiting_s=round(w.waiting_s, 1),
            waited=waited(w.waiting_s),
            first_question=w.first_question,
            last_text=w.last_text,
            last_at=w.last_at,
            last=utc(clock(w.last_at)) if w.last_at else "",
            url=f"/console/conversations/{w.id}",
        )
        for w in waiting
    ]


class ConversationView(msgspec.Struct, frozen=True, kw_only=True):
    conversation: Conversation
    messages: list[Message]
    after: int  # the last message shown: the live feed goes on from it
    earlier: int | None  # `?before=` of the page before this one; None: this page begins the conversation
    paged_back: bool  # an earlier page: no live feed, a link to the latest messages
    status: str
    mine: bool  # the signed-in agent has it: they may reply and hand it back
    waiting_s: float | None  # while it waits
    facts: dict[str, Any] | None  # the latest answer's facts (ChatFacts), as the customer read them
    facts_answer: uuid.UUID | None  # that answer's own audit row


def status_text(conversation: Conversation) -> str:
    said = words()["status"]
    if conversation.status == "agent":
        return say(said["agent"], agent=conversation.agent_name or said["an_agent"])
    return str(said[conversation.status])


def audited(message: Message) -> uuid.UUID | None:
    """The audit row of the request that answered: the customer's own question, even when the answer
    came from the cache (whose `answer_id` is the canonical answer's)."""
    return message.audit_id or message.answer_id


def conversation_view(
    conversation: Conversation, messages: list[Message], agent: ConsoleSession, now: datetime, *, paged_back: bool
) -> ConversationView:
    """`messages`: a page of the transcript (the latest, unless `paged_back`); messages are numbered from 1."""
    answered = next((m for m in reversed(messages) if m.role == "assistant" and m.facts), None)
    since = conversation.waiting_since
    return ConversationView(
        conversation=conversation,
        messages=messages,
        after=messages[-1].seq if messages else 0,
        earlier=messages[0].seq if messages and messages[0].seq > 1 else None,
        paged_back=paged_back,
        status=status_text(conversation),
        mine=conversation.status == "agent" and conversation.agent_id == agent.identity.agent_id,
        waiting_s=(now - since).total_seconds() if conversation.status == "waiting" and since else None,
        facts=answered.facts if answered else None,
        facts_answer=audited(answered) if answered else None,
    )


def cached_from(record: AnswerRecord) -> str | None:
    """A cached answer's audit row: the canonical answer it was served from. The row repeats that
    answer, whose id it keeps (app/data/answer_cache.py), beside the customer's own question."""
    if record.source != "cache":
        return None
    canonical = record.answer.get("answer_id")
    return str(canonical) if canonical and str(canonical) != str(record.id) else None
