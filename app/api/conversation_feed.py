"""A conversation's live feed, for the customer's widget and the agent's console: its new messages and
its status as Server-Sent Events, for as long as the page is open.

A message written in this process wakes the feeds that wait on it at once; one written by another
replica is found by the next poll (POLL_S), a cheap indexed read that holds no connection between
polls. No LISTEN: it would pin a server connection, which a transaction-mode pooler cannot give."""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Annotated

import msgspec
from litestar import Request
from litestar.params import QueryParameter
from litestar.response import ServerSentEvent, ServerSentEventMessage
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.event_stream import STREAM_HEADERS
from app.data import conversations
from app.data.database import autocommit

# The number of the last message a page has: message numbers are Postgres integers, so a larger one
# is a 400 before the stream starts (not a stream that dies on its first read).
After = Annotated[
    int, QueryParameter(ge=0, le=2**31 - 1, description="The number of the last message the page has (0: none).")
]
Before = Annotated[
    int | None,
    QueryParameter(ge=1, le=2**31 - 1, description="A page of the transcript: the messages before this number."),
]
# A transcript is shown a page at a time, the latest first, whatever its length: a page, the JSON and a
# feed's first load stay small (issue 34: 3,000 messages made a 3.46 MB console page).
PAGE = 50
POLL_S = 0.5
FEED_MAX_S = 600  # a page's feed ends after ten minutes; the page opens a new one
KEEPALIVE_S = 15  # a comment, so that no proxy closes an idle stream


class Wakeups:
    """In-process signals: a message was added to conversation X."""

    def __init__(self) -> None:
        self._events: dict[uuid.UUID, set[asyncio.Event]] = defaultdict(set)

    def wake(self, conversation_id: uuid.UUID) -> None:
        for event in self._events.get(conversation_id, ()):
            event.set()

    async def wait(self, conversation_id: uuid.UUID, timeout_s: float) -> None:
        event = asyncio.Event()
        waiting = self._events[conversation_id]
        waiting.add(event)
        try:
            await asyncio.wait_for(event.wait(), timeout_s)
        except TimeoutError:
            pass
        finally:
            waiting.discard(event)
            if not waiting:
                self._events.pop(conversation_id, None)


def wakeups(request: Request) -> Wakeups:  # type: ignore[type-arg]
    found: Wakeups = request.app.state.wakeups
    return found


def status_event(conversation: conversations.Conversation) -> ServerSentEventMessage:
    payload = {"status": conversation.status, "agent_name": conversation.agent_name}
    return ServerSentEventMessage(msgspec.json.encode(payload).decode(), event="status")


def message_event(message: conversations.Message) -> ServerSentEventMessage:
    return ServerSentEventMessage(msgspec.json.encode(message).decode(), event="message", id=str(message.seq))


async def _feed(
    request: Request,  # type: ignore[type-arg]
    db: AsyncEngine,
    tenant_id: int,
    conversation_id: uuid.UUID,
    after: int,
    customer_ref: str | None,
) -> AsyncIterator[ServerSentEventMessage]:
    loop = asyncio.get_running_loop()
    ends, quiet_since, status, first = loop.time() + FEED_MAX_S, loop.time(), None, True
    signals = wakeups(request)
    while loop.time() < ends:
        async with autocommit(db) as conn:
            conversation = await conversations.find(conn, tenant_id, conversation_id, customer_ref)
            if conversation is not None and first:  # at most the latest page: the rest is paged back to
                after, first = max(after, conversation.last_seq - PAGE), False
            new = await conversations.messages(conn, conversation_id, after, PAGE) if conversation else []
        if conversation is None:  # purged while open
            return
        if (conversation.status, conversation.agent_name) != status:
            status = (conversation.status, conversation.agent_name)
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
            await signals.wait(conversation_id, POLL_S)  # the response stops this generator when the page goes


def feed(
    request: Request,  # type: ignore[type-arg]
    db: AsyncEngine,
    tenant_id: int,
    conversation_id: uuid.UUID,
    after: int,
    customer_ref: str | None = None,
) -> ServerSentEvent:
    """The conversation's messages after number `after` (at most its latest PAGE), then each new one as
    it is written, and its status whenever it changes (first at once)."""
    return ServerSentEvent(_feed(request, db, tenant_id, conversation_id, after, customer_ref), headers=STREAM_HEADERS)
