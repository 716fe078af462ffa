"""The chat widget's API: POST /v1/chat answers with Server-Sent Events (app/api/event_stream.py),
GET /v1/chat/accounts lists the customer's accounts. Both take a customer session token
(app/api/customer_session.py)."""

from __future__ import annotations

from datetime import date

import msgspec
from litestar import Controller, Request, get, post
from litestar.di import NamedDependency, Provide
from litestar.params import JSONBody
from litestar.response import ServerSentEvent

from app.answers.messages import Ask
from app.answers.schemas import ChatRequest, ExplanationRequest
from app.api.body import json_body
from app.api.customer_session import Customer, provide_customer
from app.api.deps import answer_service
from app.api.event_stream import event_stream
from app.api.openapi import ACCOUNTS_ROUTE, CHAT_ROUTE
from app.api.overload import classify
from app.api.request_log import request_state, stopwatch
from app.data.customers import AccountSummary, customer_accounts
from app.data.database import autocommit


class ChatController(Controller):
    path = "/v1/chat"
    tags = ["chat"]  # noqa: RUF012
    dependencies = {"customer": Provide(provide_customer)}  # noqa: RUF012

    @post(
        "",
        status_code=200,
        before_request=json_body,
        media_type="text/event-stream",
        summary="Ask about one of the customer's accounts; the answer streams as events",
        **CHAT_ROUTE,
    )
    async def ask(
        self,
        request: Request,  # type: ignore[type-arg]
        data: JSONBody[ChatRequest],
        customer: NamedDependency[Customer],
    ) -> ServerSentEvent:
        answers = answer_service(request)
        classify(request.scope, customer.principal.priority_class, "widget")
        if answers.settings.log_questions:
            request_state(request.scope)["log_extra"] = {"question": data.question}
        ask = Ask(
            principal=customer.principal,
            request=ExplanationRequest(**msgspec.structs.asdict(data)),
            channel="widget",
            customer_ref=customer.customer_ref,
            today=date.today(),
            stopwatch=stopwatch(request.scope),
        )
        return await event_stream(request, answers.converse(ask))

    @get("/accounts", summary="The customer's accounts, for the widget's account picker", **ACCOUNTS_ROUTE)
    async def accounts(
        self,
        request: Request,  # type: ignore[type-arg]
        customer: NamedDependency[Customer],
    ) -> list[AccountSummary]:
        classify(request.scope, customer.principal.priority_class, "widget")
        async with autocommit(answer_service(request).db) as conn:
            return await customer_accounts(conn, customer.principal.tenant_id, customer.customer_ref)
