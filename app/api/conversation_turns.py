"""The chat API's side of a conversation's turns: the transcript it returns after a reload, and the
events that close a turn's stream once the conversation service has recorded it (or could not)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

import msgspec
from litestar.response import ServerSentEventMessage

from app.answers.schemas import ExplanationResponse
from app.api.event_stream import chat_facts
from app.conversations.service import ConversationService
from app.conversations.values import Message, NewTurn, NotSaved
from app.domain.vocabulary import ConversationStatus


class ConversationOut(msgspec.Struct, frozen=True, kw_only=True):
    conversation_id: uuid.UUID
    status: ConversationStatus
    agent_name: str | None
    messages: list[Message]  # the latest page (PAGE), or the one before `?before=`
    earlier: int | None  # `?before=` for the page before this one; null: this page begins the conversation


def recorder(
    service: ConversationService, turn: NewTurn
) -> Callable[[ExplanationResponse], Awaitable[list[ServerSentEventMessage]]]:
    """What the stream sends after the final answer: the `turn` recorded, or an `error` the widget
    shows ("may not have been saved") when it could not be."""

    async def record(answer: ExplanationResponse) -> list[ServerSentEventMessage]:
        done = await service.record(turn, answer, chat_facts(answer))
        if isinstance(done, NotSaved):
            told = {"error": "turn_not_saved", "message": done.message}
            return [ServerSentEventMessage(msgspec.json.encode(told).decode(), event="error")]
        return [ServerSentEventMessage(msgspec.json.encode(done).decode(), event="turn")]

    return record
