"""The chat widget's API: POST /v1/chat answers a conversation's turn with Server-Sent Events
(app/api/event_stream.py); GET /v1/chat/conversations/{id} and its live feed (…/events) give the
conversation back after a reload and deliver an agent's messages; GET /v1/chat/accounts lists the
customer's accounts. All take a customer session token (app/api/customer_session.py)."""

from __future__ import annotations

import uuid
from datetime import date

import msgspec
from litestar import Controller, Request, get, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, JSONBody
from litestar.response import ServerSentEvent, ServerSentEventMessage

from app import locales
from app.answers.messages import Ask
from app.answers.schemas import ChatRequest, ExplanationRequest
from app.api.body import json_body
from app.api.conversation_feed import After, Before, conversation_service, feed
from app.api.conversation_turns import ConversationOut, recorder
from app.api.customer_session import Customer, provide_customer
from app.api.deps import answer_service
from app.api.event_stream import event_stream
from app.api.openapi import ACCOUNTS_ROUTE, CHAT_ROUTE, CONVERSATION_ROUTE
from app.api.overload import classify
from app.api.person_messages import to_person
from app.api.request_log import request_state, stopwatch
from app.conversations.threads import NEW_THREAD
from app.conversations.values import NewTurn
from app.data.customers import AccountSummary, customer_accounts
from app.data.database import autocommit
from app.domain.understanding import language_of


def _event(name: str, payload: object) -> ServerSentEventMessage:
    return ServerSentEventMessage(msgspec.json.encode(payload).decode(), event=name)


class ChatController(Controller):
    path = "/v1/chat"
    tags = ["chat"]  # noqa: RUF012
    dependencies = {"customer": Provide(provide_customer)}  # noqa: RUF012

    @post(
        "",
        status_code=200,
        before_request=json_body,
        media_type="text/event-stream",
        summary="A turn of a conversation about one of the customer's accounts; the answer streams as events",
        **CHAT_ROUTE,
    )
    async def ask(
        self,
        request: Request,  # type: ignore[type-arg]
        data: JSONBody[ChatRequest],
        customer: NamedDependency[Customer],
    ) -> ServerSentEvent:
        answers = answer_service(request)
        principal = customer.principal
        classify(request.scope, principal.priority_class, "widget")
        if answers.settings.logs.questions:
            request_state(request.scope)["log_extra"] = {"question": data.question}
        service, tenant = conversation_service(request), principal.tenant_id
        conversation, thread = None, NEW_THREAD
        if data.conversation_id is not None:
            continued = await service.continuing(tenant, customer.customer_ref, data.conversation_id)
            if continued.thread is None:  # a person answers now: the message is theirs
                return await to_person(request, answers, customer, continued.conversation.id, data)
            conversation, thread = continued.conversation, continued.thread
        conversation_id = conversation.id if conversation else uuid.uuid4()
        language = language_of(data.question)
        # Asked the way the page says the question's language, after a turn in another one too.
        asked = locales.closest(data.locale, language, data.page_locale) if data.page_locale else data.locale
        ask = Ask(
            principal=principal,
            request=ExplanationRequest(
                account_ref=data.account_ref, question=data.question, as_of=data.as_of, locale=asked
            ),
            channel="widget",
            customer_ref=customer.customer_ref,
            today=date.today(),
            stopwatch=stopwatch(request.scope),
            thread=thread,
        )
        # The language the question was written in (a new conversation's: what the console calls it).
        # said the way the page says that language (app/locales.py: "en" on an "en-XA" page is "en-XA").
        page = conversation.locale if conversation else data.locale
        written_in = locales.closest(page, language, data.page_locale) or page or locales.default()
        turn = NewTurn(
            principal=principal,
            customer_ref=customer.customer_ref,
            conversation_id=conversation_id,
            new=conversation is None,
            seen=conversation.last_seq if conversation else 0,
            audit_id=ask.audit_id,
            question=data.question,
            account_ref=data.account_ref,
            locale=written_in,
            thread=thread,
        )
        head = _event("conversation", {"conversation_id": conversation_id, "status": "bot"})
        return await event_stream(request, answers.converse(ask), head=[head], after_final=recorder(service, turn))

    @get(
        "/conversations/{conversation_id:uuid}",
        summary="A conversation's messages, to show it again after a reload",
        **CONVERSATION_ROUTE,
    )
    async def conversation(
        self,
        request: Request,  # type: ignore[type-arg]
        conversation_id: FromPath[uuid.UUID],
        customer: NamedDependency[Customer],
        before: Before = None,
    ) -> ConversationOut:
        classify(request.scope, customer.principal.priority_class, "widget")
        page = await conversation_service(request).transcript(
            customer.principal.tenant_id, conversation_id, customer_ref=customer.customer_ref, before=before
        )
        found = page.conversation
        return ConversationOut(
            conversation_id=found.id,
            status=found.status,
            agent_name=found.agent_name,
            messages=page.messages,
            earlier=page.earlier,
        )

    @get(
        "/conversations/{conversation_id:uuid}/events",
        media_type="text/event-stream",
        summary="A conversation's new messages and status, live (an agent's replies)",
        **CONVERSATION_ROUTE,
    )
    async def events(
        self,
        request: Request,  # type: ignore[type-arg]
        conversation_id: FromPath[uuid.UUID],
        customer: NamedDependency[Customer],
        after: After = 0,
    ) -> ServerSentEvent:
        return await feed(request, customer.principal.tenant_id, conversation_id, after, customer.customer_ref)

    @get("/accounts", summary="The customer's accounts, for the widget's account picker", **ACCOUNTS_ROUTE)
    async def accounts(
        self,
        request: Request,  # type: ignore[type-arg]
        customer: NamedDependency[Customer],
    ) -> list[AccountSummary]:
        classify(request.scope, customer.principal.priority_class, "widget")
        async with autocommit(answer_service(request).db) as conn:
            return await customer_accounts(conn, customer.principal.tenant_id, customer.customer_ref)
