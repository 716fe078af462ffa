"""A conversation (`AnswerService.converse`, app/answers/service.py) as Server-Sent Events, for the
chat widget and the console: `facts` (every number, formatted as the customer reads it), `delta`* (the answer's
text as the model writes it), `replace`? (the deterministic answer, when the model's failed
validation), `final` (the answer as audited), then whatever the caller adds.

The first event is produced before the response starts, so admission, the account check and the
facts come first and a refusal is an HTTP status (401/404/429/503), never an event."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable

import msgspec
import structlog
from litestar import Request
from litestar.response import ServerSentEvent, ServerSentEventMessage

from app.answers.messages import ChatEvent, Delta, Facts, Final, Replace
from app.answers.schemas import ChatFacts, DriverLine, ExplanationResponse, FactsDisplay
from app.api.disconnect import until_disconnect
from app.api.request_log import request_state
from app.domain.reasons import Reason
from app.errors import DatabaseUnavailable
from app.locales import day, money
from app.prompts import change, phrases, render_notice

log = structlog.get_logger("bill_assistant.chat")

# No proxy or browser may buffer or keep the stream.
STREAM_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}


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
            DriverLine(label=label, amount=change(d.amount, currency, locale))
            for label, d in zip(labels, answer.drivers, strict=True)
        ],
    )
    return ChatFacts(
        account_ref=answer.account_ref,
        currency=currency,
        locale=locale,
        intent=answer.intent,
        statement=answer.statement,
        totals=answer.totals,
        drivers=answer.drivers,
        payment=answer.payment,
        display=display,
        sources=answer.sources,
    )


def _message(event: ChatEvent, why: Callable[[Reason], str] | None) -> ServerSentEventMessage:
    payload: msgspec.Struct | dict[str, str]
    match event:
        case Facts(answer):
            name, payload = "facts", chat_facts(answer)
        case Delta(text):
            name, payload = "delta", {"text": text}
        case Replace(text=text, reason=reason):
            name, payload = "replace", {"text": text, "reason": str(reason)}
            if why is not None:  # a page that shows it: the reason in its words
                payload["why"] = why(reason)
        case Final(answer):
            name, payload = "final", answer
    return ServerSentEventMessage(msgspec.json.encode(payload).decode(), event=name)


# What a caller adds after the answer, once it is audited (a conversation records its turn).
AfterFinal = Callable[[ExplanationResponse], Awaitable[Iterable[ServerSentEventMessage]]]


async def _messages(
    request: Request,  # type: ignore[type-arg]
    first: ChatEvent,
    rest: AsyncIterator[ChatEvent],
    head: Iterable[ServerSentEventMessage],
    tail: Iterable[ServerSentEventMessage],
    after_final: AfterFinal | None,
    why: Callable[[Reason], str] | None,
) -> AsyncIterator[ServerSentEventMessage]:
    for message in head:
        yield message
    yield _message(first, why)
    try:
        async for event in rest:
            yield _message(event, why)
            if isinstance(event, Final):
                extra = request_state(request.scope).setdefault("log_extra", {})
                extra.update(intent=event.answer.intent, source=event.answer.source)
                for message in await after_final(event.answer) if after_final else ():
                    yield message
    except DatabaseUnavailable:
        # The answer was shown but could not be audited: say so, rather than break off the stream
        # (which a widget reads as a lost connection). Its language is the facts' (the answer's).
        assert isinstance(first, Facts)
        log.warning("answer not saved: the database went away after its text was sent")
        told = {"error": "answer_not_saved", "message": render_notice("not_saved", first.answer.locale)}
        yield ServerSentEventMessage(msgspec.json.encode(told).decode(), event="error")
        return
    for message in tail:
        yield message


async def event_stream(
    request: Request,  # type: ignore[type-arg]
    events: AsyncIterator[ChatEvent],
    *,
    headers: dict[str, str] | None = None,
    head: Iterable[ServerSentEventMessage] = (),
    tail: Iterable[ServerSentEventMessage] = (),
    after_final: AfterFinal | None = None,
    why: Callable[[Reason], str] | None = None,
) -> ServerSentEvent:
    async def first() -> ChatEvent:
        return await anext(events)

    # Admitted and checked before the response starts; from here the generator holds the
    # admission slot until it ends (or is collected, should the stream never start).
    facts = await until_disconnect(request, first())
    messages = _messages(request, facts, events, head, tail, after_final, why)
    return ServerSentEvent(messages, headers=STREAM_HEADERS | (headers or {}))
