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
from sqlalchemy.ext.asyncio import AsyncEngine

from app.answers.pipeline import converse
from app.answers.schemas import AccountOut, ChatRequest, ExplanationRequest
from app.api.customer_session import Customer, provide_customer
from app.api.event_stream import event_stream
from app.api.request_log import request_state, stopwatch
from app.data.customers import customer_accounts
from app.data.database import autocommit
from app.inference.engine import Engine
from app.inference.scheduler import Scheduler
from app.settings import Settings


class ChatController(Controller):
    path = "/v1/chat"
    tags = ["chat"]  # noqa: RUF012
    dependencies = {"customer": Provide(provide_customer)}  # noqa: RUF012

    @post("", status_code=200, summary="Ask about one of the customer's accounts; the answer streams as events")
    async def ask(
        self,
        request: Request,  # type: ignore[type-arg]
        data: JSONBody[ChatRequest],
        customer: NamedDependency[Customer],
        db_engine: NamedDependency[AsyncEngine],
        llm: NamedDependency[Engine | None],
        scheduler: NamedDependency[Scheduler],
        settings: NamedDependency[Settings],
    ) -> ServerSentEvent:
        request_state(request.scope)["channel"] = "widget"
        if settings.log_questions:
            request_state(request.scope)["log_extra"] = {"question": data.question}
        events = converse(
            db_engine,
            llm,
            scheduler,
            settings,
            customer.principal,
            ExplanationRequest(**msgspec.structs.asdict(data)),
            channel="widget",
            customer_ref=customer.customer_ref,
            today=date.today(),
            stopwatch=stopwatch(request.scope),
        )

        return await event_stream(request, events)

    @get("/accounts", summary="The customer's accounts, for the widget's account picker")
    async def accounts(
        self, customer: NamedDependency[Customer], db_engine: NamedDependency[AsyncEngine]
    ) -> list[AccountOut]:
        async with autocommit(db_engine) as conn:
            return await customer_accounts(conn, customer.principal.tenant_id, customer.customer_ref)
