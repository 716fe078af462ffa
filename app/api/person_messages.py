"""A customer's message into a conversation a person answers (waiting for an agent, or with one): no
answer is made, the message is stored for the agent. Limited like every customer-writable path: a
token of the bank's rate (app/inference/rate.py), then the conversation's own caps
(app/domain/message_limits.py), each 429 with Retry-After; about one of the customer's own accounts."""

from __future__ import annotations

import uuid

import msgspec
from litestar import Request
from litestar.response import ServerSentEvent, ServerSentEventMessage

from app.answers.schemas import ChatRequest
from app.answers.service import AnswerService
from app.api.conversation_feed import conversation_service
from app.api.customer_session import Customer
from app.domain.message_limits import MessageCaps, Refusal
from app.domain.priority import effective_level
from app.errors import Shed
from app.inference.rate import take_token


def _event(name: str, payload: object) -> ServerSentEventMessage:
    return ServerSentEventMessage(msgspec.json.encode(payload).decode(), event=name)


def caps(answers: AnswerService) -> MessageCaps:
    settings = answers.settings
    return MessageCaps(
        per_minute=settings.conversations.messages_per_minute,
        unanswered=settings.conversations.unanswered_max,
        unanswered_chars=settings.conversations.unanswered_chars,
    )


async def to_person(
    request: Request,  # type: ignore[type-arg]
    answers: AnswerService,
    customer: Customer,
    conversation_id: uuid.UUID,
    data: ChatRequest,
) -> ServerSentEvent:
    """Stores the message (`conversation` and `turn` events), or refuses it: 429, 404."""
    principal = customer.principal
    await take_token(answers.scheduler, principal.tenant_slug, principal.limits, level_of(customer))
    sent = await conversation_service(request).to_person(
        principal.tenant_id, customer.customer_ref, conversation_id, data.question, data.account_ref, caps(answers)
    )
    if isinstance(sent, Refusal):
        answers.scheduler.hooks.shed(principal.tenant_slug, level_of(customer), "too_many_messages")
        raise Shed(429, "too_many_messages", sent.retry_after_s, sent.message)
    return ServerSentEvent(
        [
            _event("conversation", {"conversation_id": conversation_id, "status": sent.status}),
            _event("turn", {"customer_seq": sent.seq, "status": sent.status}),
        ]
    )


def level_of(customer: Customer) -> int:
    return effective_level(customer.principal.priority_class, "widget")
