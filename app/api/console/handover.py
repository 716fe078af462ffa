"""The console's side of a widget conversation's handover: the bank's queue of waiting
conversations, taking one (of two agents taking it at once exactly one wins), replying, and handing
it back to the assistant. Each step writes to Postgres and wakes the conversation's live feed
(app/api/conversation_feed.py), so the customer's widget shows it at once.

Every route is scoped by the signed-in agent's tenant: another bank's conversation is "not found",
exactly like a missing one."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import msgspec
from litestar import Controller, Request, Response, get, post
from litestar.datastructures import FormMultiDict
from litestar.di import NamedDependency, Provide
from litestar.exceptions import PermissionDeniedException
from litestar.params import FromPath
from litestar.response import Redirect, ServerSentEvent
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.api.console.conversation_views import REASONS, ROLES, QueueRow, clock, conversation_view, queue_rows, waited
from app.api.console.forms import field, provide_form, reply_text
from app.api.console.pages import EXCEPTION_HANDLERS, SECURITY_HEADERS, console_page
from app.api.console.session import PATH, provide_agent
from app.api.console.views import LOCALES
from app.api.conversation_feed import PAGE, After, Before, feed, wakeups
from app.data import conversations
from app.data.agents import ConsoleSession
from app.data.database import autocommit
from app.errors import NotFound
from app.metrics import HANDOVER_WAIT_BY
from app.prompts import render_notice

TAKEN = "This conversation was taken by another agent"
NOT_YOURS = "Only the agent who has this conversation can reply to it or hand it back"


class QueueOut(msgspec.Struct, frozen=True, kw_only=True):
    waiting: list[QueueRow]


def _id(conversation_id: str) -> uuid.UUID:
    """The path's id; not an id at all is as unknown as any other."""
    try:
        return uuid.UUID(conversation_id)
    except ValueError:
        raise NotFound(f"conversation {conversation_id!r} not found") from None


async def _find(conn: AsyncConnection, agent: ConsoleSession, cid: uuid.UUID) -> conversations.Conversation:
    found = await conversations.find(conn, agent.identity.tenant_id, cid)
    if found is None:
        raise NotFound(f"conversation {cid} not found")
    return found


def _page_of(cid: uuid.UUID) -> str:
    return f"{PATH}/conversations/{cid}"


async def _conversation_page(
    db: AsyncEngine,
    agent: ConsoleSession,
    cid: uuid.UUID,
    *,
    before: int | None = None,
    reply: str = "",
    error: str | None = None,
    status: int = 200,
) -> Response[Any]:
    async with autocommit(db) as conn:
        found = await _find(conn, agent, cid)
        said = await conversations.latest(conn, cid, PAGE, before)
    view = conversation_view(found, said, agent, datetime.now(UTC), paged_back=before is not None)
    return console_page(
        "conversation.html",
        status=status,
        agent=agent,
        view=view,
        reply=reply,
        error=error,
        reasons=REASONS,
        roles=ROLES,
        locales=LOCALES,
        waited=waited,
        clock=clock,
    )


class HandoverController(Controller):
    path = PATH
    include_in_schema = False
    dependencies = {"agent": Provide(provide_agent), "form": Provide(provide_form)}  # noqa: RUF012
    exception_handlers = EXCEPTION_HANDLERS

    @get("/queue")
    async def queue_page(
        self, agent: NamedDependency[ConsoleSession], db_engine: NamedDependency[AsyncEngine]
    ) -> Response[Any]:
        async with autocommit(db_engine) as conn:
            waiting = await conversations.queue(conn, agent.identity.tenant_id)
        return console_page("queue.html", agent=agent, rows=queue_rows(waiting))

    @get("/queue.json")
    async def queue_json(
        self, agent: NamedDependency[ConsoleSession], db_engine: NamedDependency[AsyncEngine]
    ) -> Response[QueueOut]:
        """The queue page's rows, which its script asks for every two seconds."""
        async with autocommit(db_engine) as conn:
            waiting = await conversations.queue(conn, agent.identity.tenant_id)
        return Response(QueueOut(waiting=queue_rows(waiting)), headers=SECURITY_HEADERS)

    @post("/conversations/{conversation_id:str}/take")
    async def take(
        self,
        request: Request,  # type: ignore[type-arg]
        agent: NamedDependency[ConsoleSession],
        form: NamedDependency[FormMultiDict],  # asked for its CSRF check
        db_engine: NamedDependency[AsyncEngine],
        conversation_id: FromPath[str],
    ) -> Response[Any]:
        cid, me = _id(conversation_id), agent.identity
        # The take and its notice commit together: the customer never reads "joined" for a lost take.
        async with db_engine.begin() as conn:
            waited = await conversations.take(conn, me.tenant_id, cid, me.agent_id)
            found = await _find(conn, agent, cid)
            if waited is not None:
                notice = render_notice("joined", found.locale, name=me.display_name)
                await conversations.append(conn, cid, "system", notice, agent_id=me.agent_id)
        if waited is None:
            if found.status == "agent" and found.agent_id == me.agent_id:
                return Redirect(_page_of(cid), status_code=303)  # a second click of the same agent
            taken = found.status == "agent"
            return console_page(
                "error.html",
                status=409,
                agent=agent,
                title="Already taken" if taken else "Not waiting",
                message=f"{TAKEN} ({found.agent_name})." if taken else "This conversation is not waiting any more.",
                back=f"{PATH}/queue",
                back_label="Back to the waiting conversations",
            )
        HANDOVER_WAIT_BY(me.tenant_slug).observe(waited.total_seconds())
        wakeups(request).wake(cid)
        return Redirect(_page_of(cid), status_code=303)

    @get("/conversations/{conversation_id:str}")
    async def conversation(
        self,
        agent: NamedDependency[ConsoleSession],
        db_engine: NamedDependency[AsyncEngine],
        conversation_id: FromPath[str],
        before: Before = None,
    ) -> Response[Any]:
        return await _conversation_page(db_engine, agent, _id(conversation_id), before=before)

    @get("/conversations/{conversation_id:str}/events")
    async def events(
        self,
        request: Request,  # type: ignore[type-arg]
        agent: NamedDependency[ConsoleSession],
        db_engine: NamedDependency[AsyncEngine],
        conversation_id: FromPath[str],
        after: After = 0,
    ) -> ServerSentEvent:
        """The page's live transcript: the messages after `after`, then each new one, and the status."""
        cid = _id(conversation_id)
        async with autocommit(db_engine) as conn:
            await _find(conn, agent, cid)  # a 404 before any stream
        return feed(request, db_engine, agent.identity.tenant_id, cid, after)

    @post("/conversations/{conversation_id:str}/messages")
    async def reply(
        self,
        request: Request,  # type: ignore[type-arg]
        agent: NamedDependency[ConsoleSession],
        form: NamedDependency[FormMultiDict],
        db_engine: NamedDependency[AsyncEngine],
        conversation_id: FromPath[str],
    ) -> Response[Any]:
        cid, me = _id(conversation_id), agent.identity
        async with db_engine.begin() as conn:
            found = await _find(conn, agent, cid)
            if found.status != "agent" or found.agent_id != me.agent_id:
                raise PermissionDeniedException(f"{NOT_YOURS}.")
            error: str | None = None
            try:
                said = reply_text(form)
            except msgspec.ValidationError as exc:
                error = f"The reply was not sent: {exc}."
            else:
                await conversations.append(conn, cid, "agent", said, agent_id=me.agent_id)
        if error is not None:
            return await _conversation_page(db_engine, agent, cid, reply=field(form, "text"), error=error, status=400)
        wakeups(request).wake(cid)
        return Redirect(f"{_page_of(cid)}#reply", status_code=303)

    @post("/conversations/{conversation_id:str}/release")
    async def release(
        self,
        request: Request,  # type: ignore[type-arg]
        agent: NamedDependency[ConsoleSession],
        form: NamedDependency[FormMultiDict],  # asked for its CSRF check
        db_engine: NamedDependency[AsyncEngine],
        conversation_id: FromPath[str],
    ) -> Response[Any]:
        cid, me = _id(conversation_id), agent.identity
        async with db_engine.begin() as conn:
            released = await conversations.release(conn, me.tenant_id, cid, me.agent_id)
            found = await _find(conn, agent, cid)
            if not released:
                raise PermissionDeniedException(f"{NOT_YOURS}.")
            await conversations.append(conn, cid, "system", render_notice("back", found.locale))
        wakeups(request).wake(cid)
        return Redirect(f"{PATH}/queue", status_code=303)
