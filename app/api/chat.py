"""The chat widget's API: POST /v1/chat answers with Server-Sent Events, GET /v1/chat/accounts lists
the customer's accounts. Both take a customer session token (app/api/customer_session.py).

Events: `facts` (every number, formatted as the customer reads it), `delta`* (the answer's text
as the model writes it), `replace`? (the deterministic answer, when the model's failed validation),
`final` (the answer as audited). Admission, the account check and the facts happen before the
first byte, so a refusal is an HTTP status (401/404/429/503), never an event."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import date

import msgspec
from litestar import Controller, Request, get, post
from litestar.di import NamedDependency, Provide
from litestar.params import JSONBody
from litestar.response import ServerSentEvent, ServerSentEventMessage
from sqlalchemy.ext.asyncio import AsyncEngine

from app.answers.pipeline import ChatEvent, Delta, Facts, Final, Replace, converse
from app.answers.schemas import (
    AccountOut,
    ChatFacts,
    ChatRequest,
    DriverLine,
    ExplanationRequest,
    ExplanationResponse,
    FactsDisplay,
)
from app.api.customer_session import Customer, provide_customer
from app.api.disconnect import until_disconnect
from app.api.request_log import request_state, stopwatch
from app.data.customers import customer_accounts
from app.data.database import autocommit
from app.domain.formatting import day, money
from app.inference.engine import Engine
from app.inference.scheduler import Scheduler
from app.prompts import phrases
from app.settings import Settings

# No proxy or browser may buffer or keep the stream.
_STREAM_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}


def chat_facts(answer: ExplanationResponse) -> ChatFacts:
    currency, locale = answer.currency, answer.locale
    labels, status = phrases(answer.drivers, answer.payment.status, locale)
    display = FactsDisplay(
        current=money(answer.totals.current, currency, locale),
        previous=money(answer.totals.previous, currency, locale),
        difference=money(answer.totals.difference, currency, locale, sign=True),
        minimum_due=money(answer.statement.minimum_due, currency, locale),
        due_date=day(answer.statement.due_date, locale),
        status=status,
        drivers=[
            DriverLine(label, money(d.amount, currency, locale, sign=True))
            for label, d in zip(labels, answer.drivers, strict=True)
        ],
    )
    return ChatFacts(
        answer.account_ref, currency, locale, answer.intent, answer.statement, answer.totals, answer.drivers,
        answer.payment, display,
    )  # fmt: skip


def _message(event: ChatEvent) -> ServerSentEventMessage:
    payload: msgspec.Struct | dict[str, str]
    match event:
        case Facts(answer):
            name, payload = "facts", chat_facts(answer)
        case Delta(text):
            name, payload = "delta", {"text": text}
        case Replace(text, reason):
            name, payload = "replace", {"text": text, "reason": reason}
        case Final(answer):
            name, payload = "final", answer
    return ServerSentEventMessage(msgspec.json.encode(payload).decode(), event=name)


async def _stream(
    request: Request,  # type: ignore[type-arg]
    first: ChatEvent,
    rest: AsyncIterator[ChatEvent],
) -> AsyncIterator[ServerSentEventMessage]:
    yield _message(first)
    async for event in rest:
        if isinstance(event, Final):
            request_state(request.scope)["log_extra"] = {"intent": event.answer.intent, "source": event.answer.source}
        yield _message(event)


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

        async def first() -> ChatEvent:
            return await anext(events)

        # Admitted and checked before the response starts; from here the generator holds the
        # admission slot until it ends (or is collected, should the stream never start).
        facts = await until_disconnect(request, first())
        return ServerSentEvent(_stream(request, facts, events), headers=_STREAM_HEADERS)

    @get("/accounts", summary="The customer's accounts, for the widget's account picker")
    async def accounts(
        self, customer: NamedDependency[Customer], db_engine: NamedDependency[AsyncEngine]
    ) -> list[AccountOut]:
        async with autocommit(db_engine) as conn:
            return await customer_accounts(conn, customer.principal.tenant_id, customer.customer_ref)
