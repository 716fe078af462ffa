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
from app.api.conversation_feed import wakeups
from app.api.customer_session import Customer
from app.data import conversations
from app.data.customers import customer_accounts
from app.data.database import connection
from app.domain.message_limits import MessageCaps, refusal
from app.domain.priority import effective_level
from app.errors import NotFound, Shed
from app.inference.rate import take_token


def _event(name: str, payload: object) -> ServerSentEventMessage:
    return ServerSentEventMessage(msgspec.json.encode(payload).decode(), event=name)


def caps(answers: AnswerService) -> MessageCaps:
    settings = answers.settings
    return MessageCaps(
        per_minute=settings.conversation_messages_per_minute,
        unanswered=settings.conversation_unanswered_max,
        unanswered_chars=settings.conversation_unanswered_chars,
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
    async with connection(answers.db, transaction=True) as conn:
        # The row is held while its messages are counted: two messages at once cannot both take the last place.
        found = await conversations.find(conn, principal.tenant_id, conversation_id, customer.customer_ref, lock=True)
        if found is None:
            raise NotFound(f"conversation {conversation_id} not found")
        owned = await customer_accounts(conn, principal.tenant_id, customer.customer_ref)
        if data.account_ref not in {a.account_ref for a in owned}:
            raise NotFound(f"account {data.account_ref!r} not found")
        refused = refusal(await conversations.pace(conn, conversation_id), caps(answers), len(data.question))
        if refused is not None:
            answers.scheduler.hooks.shed(principal.tenant_slug, level_of(customer), "too_many_messages")
            raise Shed(429, "too_many_messages", refused.retry_after_s, refused.message)
        seq = await conversations.append(conn, conversation_id, "customer", data.question, account_ref=data.account_ref)
    wakeups(request).wake(conversation_id)
    return ServerSentEvent(
        [
            _event("conversation", {"conversation_id": conversation_id, "status": found.status}),
            _event("turn", {"customer_seq": seq, "status": found.status}),
        ]
    )


def level_of(customer: Customer) -> int:
    return effective_level(customer.principal.priority_class, "widget")
