"""The console's side of a widget conversation's handover: the bank's queue of waiting
conversations, taking one (of two agents taking it at once exactly one wins), replying, and handing
it back to the assistant: pages and redirects around the conversation service (app/conversations/),
whose every step is one transaction and wakes the conversation's live feed, so the customer's widget
shows it at once.

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
from litestar.params import FromPath
from litestar.response import Redirect, ServerSentEvent

from app.api.console.conversation_views import (
    QueueRow,
    agent_of,
    audited,
    clock,
    conversation_view,
    moment,
    queue_rows,
    waited,
)
from app.api.console.forms import field, provide_form, reply_text
from app.api.console.pages import EXCEPTION_HANDLERS, SECURITY_HEADERS, console_page
from app.api.console.session import PATH, provide_agent
from app.api.console.words import LANGUAGES, language, say, words
from app.api.conversation_feed import After, Before, conversation_service, feed
from app.conversations.values import TakeRefused
from app.data.agents import ConsoleSession
from app.errors import NotFound


class QueueOut(msgspec.Struct, frozen=True, kw_only=True):
    waiting: list[QueueRow]


def _id(conversation_id: str) -> uuid.UUID:
    """The path's id; not an id at all is as unknown as any other."""
    try:
        return uuid.UUID(conversation_id)
    except ValueError:
        raise NotFound(f"conversation {conversation_id!r} not found") from None


def _page_of(cid: uuid.UUID) -> str:
    return f"{PATH}/conversations/{cid}"


async def _conversation_page(
    request: Request,  # type: ignore[type-arg]
    agent: ConsoleSession,
    cid: uuid.UUID,
    *,
    before: int | None = None,
    reply: str = "",
    error: str | None = None,
    status: int = 200,
) -> Response[Any]:
    page = await conversation_service(request).transcript(agent.identity.tenant_id, cid, before=before)
    view = conversation_view(page.conversation, page.messages, agent, datetime.now(UTC), paged_back=before is not None)
    return console_page(
        "conversation.html",
        status=status,
        agent=agent,
        view=view,
        reply=reply,
        error=error,
        languages=dict(LANGUAGES),
        waited=waited,
        clock=clock,
        moment=moment,
        language=language,
        audited=audited,
    )


class HandoverController(Controller):
    path = PATH
    include_in_schema = False
    dependencies = {"agent": Provide(provide_agent), "form": Provide(provide_form)}  # noqa: RUF012
    exception_handlers = EXCEPTION_HANDLERS

    @get("/queue")
    async def queue_page(
        self,
        request: Request,  # type: ignore[type-arg]
        agent: NamedDependency[ConsoleSession],
    ) -> Response[Any]:
        waiting = await conversation_service(request).queue(agent.identity.tenant_id)
        return console_page("queue.html", agent=agent, rows=queue_rows(waiting))

    @get("/queue.json")
    async def queue_json(
        self,
        request: Request,  # type: ignore[type-arg]
        agent: NamedDependency[ConsoleSession],
    ) -> Response[QueueOut]:
        """The queue page's rows, which its script asks for every two seconds."""
        waiting = await conversation_service(request).queue(agent.identity.tenant_id)
        return Response(QueueOut(waiting=queue_rows(waiting)), headers=SECURITY_HEADERS)

    @post("/conversations/{conversation_id:str}/take")
    async def take(
        self,
        request: Request,  # type: ignore[type-arg]
        agent: NamedDependency[ConsoleSession],
        form: NamedDependency[FormMultiDict],  # asked for its CSRF check
        conversation_id: FromPath[str],
    ) -> Response[Any]:
        cid = _id(conversation_id)
        taken = await conversation_service(request).take(agent_of(agent), cid)
        if isinstance(taken, TakeRefused):
            found = taken.conversation
            if found.status == "agent" and found.agent_id == agent.identity.agent_id:
                return Redirect(_page_of(cid), status_code=303)  # a second click of the same agent
            said = words()["errors"]
            by_another = found.status == "agent"
            return console_page(
                "error.html",
                status=409,
                agent=agent,
                title=said["already_taken"] if by_another else said["not_waiting"],
                message=say(said["taken"], agent=found.agent_name) if by_another else said["not_waiting_message"],
                back=f"{PATH}/queue",
                back_label=said["back_queue"],
            )
        return Redirect(_page_of(cid), status_code=303)

    @get("/conversations/{conversation_id:str}")
    async def conversation(
        self,
        request: Request,  # type: ignore[type-arg]
        agent: NamedDependency[ConsoleSession],
        conversation_id: FromPath[str],
        before: Before = None,
    ) -> Response[Any]:
        return await _conversation_page(request, agent, _id(conversation_id), before=before)

    @get("/conversations/{conversation_id:str}/events")
    async def events(
        self,
        request: Request,  # type: ignore[type-arg]
        agent: NamedDependency[ConsoleSession],
        conversation_id: FromPath[str],
        after: After = 0,
    ) -> ServerSentEvent:
        """The page's live transcript: the messages after `after`, then each new one, and the status."""
        return await feed(request, agent.identity.tenant_id, _id(conversation_id), after)

    @post("/conversations/{conversation_id:str}/messages")
    async def reply(
        self,
        request: Request,  # type: ignore[type-arg]
        agent: NamedDependency[ConsoleSession],
        form: NamedDependency[FormMultiDict],
        conversation_id: FromPath[str],
    ) -> Response[Any]:
        cid, service, me = _id(conversation_id), conversation_service(request), agent_of(agent)
        try:
            said = reply_text(form)
        except msgspec.ValidationError:
            await service.mine(me, cid)  # not theirs: refused before the text is judged
            error = words()["errors"]["reply"]  # msgspec's reason is the API's, in English
            return await _conversation_page(request, agent, cid, reply=field(form, "text"), error=error, status=400)
        await service.reply(me, cid, said)
        return Redirect(f"{_page_of(cid)}#reply", status_code=303)

    @post("/conversations/{conversation_id:str}/writing", status_code=204)
    async def writing(
        self,
        request: Request,  # type: ignore[type-arg]
        agent: NamedDependency[ConsoleSession],
        form: NamedDependency[FormMultiDict],  # asked for its CSRF check
        conversation_id: FromPath[str],
    ) -> None:
        """The agent is typing a reply (console.js, at most every couple of seconds while they type)."""
        await conversation_service(request).writing(agent_of(agent), _id(conversation_id))

    @post("/conversations/{conversation_id:str}/release")
    async def release(
        self,
        request: Request,  # type: ignore[type-arg]
        agent: NamedDependency[ConsoleSession],
        form: NamedDependency[FormMultiDict],  # asked for its CSRF check
        conversation_id: FromPath[str],
    ) -> Response[Any]:
        await conversation_service(request).release(agent_of(agent), _id(conversation_id))
        return Redirect(f"{PATH}/queue", status_code=303)
