"""A conversation's live feed, for the customer's widget and the agent's console: its new messages and
its status as Server-Sent Events, for as long as the page is open; and how a handler reaches the
conversation service (app/conversations/).

A message written in this process wakes the feeds that wait on it at once; one written by another
replica is found by the next poll (POLL_S), a cheap indexed read that holds no connection between
polls. No LISTEN: it would pin a server connection, which a transaction-mode pooler cannot give."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Annotated

import msgspec
from litestar import Request
from litestar.params import QueryParameter
from litestar.response import ServerSentEvent, ServerSentEventMessage

from app.api.deps import answer_service
from app.api.event_stream import STREAM_HEADERS
from app.conversations.service import PAGE, ConversationService
from app.conversations.values import Conversation, Message
from app.conversations.wakeups import Wakeups

__all__ = ["PAGE", "After", "Before", "Wakeups", "conversation_service", "feed"]

# The number of the last message a page has: message numbers are Postgres integers, so a larger one
# is a 400 before the stream starts (not a stream that dies on its first read).
After = Annotated[
    int, QueryParameter(ge=0, le=2**31 - 1, description="The number of the last message the page has (0: none).")
]
Before = Annotated[
    int | None,
    QueryParameter(ge=1, le=2**31 - 1, description="A page of the transcript: the messages before this number."),
]
POLL_S = 0.5
FEED_MAX_S = 600  # a page's feed ends after ten minutes; the page opens a new one
KEEPALIVE_S = 15  # a comment, so that no proxy closes an idle stream


def conversation_service(request: Request) -> ConversationService:  # type: ignore[type-arg]
    """The conversation service on the app's database, waking this process's feeds."""
    wakeups: Wakeups = request.app.state.wakeups
    return ConversationService(answer_service(request).db, wakeups)


def status_event(conversation: Conversation) -> ServerSentEventMessage:
    payload = {
        "status": conversation.status,
        "agent_name": conversation.agent_name,
        "agent_writing": conversation.agent_writing,
    }
    return ServerSentEventMessage(msgspec.json.encode(payload).decode(), event="status")


def message_event(message: Message) -> ServerSentEventMessage:
    return ServerSentEventMessage(msgspec.json.encode(message).decode(), event="message", id=str(message.seq))


async def _feed(
    service: ConversationService, tenant_id: int, conversation_id: uuid.UUID, after: int, customer_ref: str | None
) -> AsyncIterator[ServerSentEventMessage]:
    loop = asyncio.get_running_loop()
    ends, quiet_since, status, first = loop.time() + FEED_MAX_S, loop.time(), None, True
    while loop.time() < ends:
        polled = await service.poll(tenant_id, conversation_id, after, customer_ref, first=first)
        if polled is None:  # purged while open
            return
        first, conversation, new = False, polled.conversation, polled.messages
        if (conversation.status, conversation.agent_name, conversation.agent_writing) != status:
            status = (conversation.status, conversation.agent_name, conversation.agent_writing)
            yield status_event(conversation)
        for message in new:
            after = message.seq
            yield message_event(message)
        if new:
            quiet_since = loop.time()
        elif loop.time() - quiet_since > KEEPALIVE_S:
            quiet_since = loop.time()
            yield ServerSentEventMessage(comment="keep-alive")
        if len(new) < PAGE:  # a full batch: more may be there already
            await service.wakeups.wait(conversation_id, POLL_S)  # the response stops this generator when the page goes


async def feed(
    request: Request,  # type: ignore[type-arg]
    tenant_id: int,
    conversation_id: uuid.UUID,
    after: int,
    customer_ref: str | None = None,
) -> ServerSentEvent:
    """The conversation's messages after number `after` (at most its latest PAGE), then each new one as
    it is written, and its status whenever it changes (first at once). An unknown conversation is a
    404 before the stream starts."""
    service = conversation_service(request)
    await service.find(tenant_id, conversation_id, customer_ref)
    stream = _feed(service, tenant_id, conversation_id, after, customer_ref)
    return ServerSentEvent(stream, headers=STREAM_HEADERS)
