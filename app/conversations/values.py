"""What goes into the conversation service and what comes out of it: typed values, no HTTP."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta

import msgspec

from app.data.conversations import Conversation, Message
from app.data.tenants import Principal
from app.domain.conversation import Thread
from app.domain.vocabulary import ConversationStatus, Locale

__all__ = [
    "Agent",
    "Continued",
    "Conversation",
    "Message",
    "NewTurn",
    "NotSaved",
    "NotYours",
    "Polled",
    "Sent",
    "TakeRefused",
    "Taken",
    "Transcript",
    "TurnRecorded",
]


class NotYours(Exception):
    """Only the agent who has the conversation can reply to it or hand it back."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Agent:
    """A signed-in agent, as the service needs them: of which bank, and who."""

    tenant_id: int
    tenant_slug: str
    agent_id: int
    display_name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Continued:
    """A customer's conversation as their next message finds it: the assistant answers it (with the
    thread its earlier turns hand the question), or a person does (`thread` None)."""

    conversation: Conversation
    thread: Thread | None


@dataclass(frozen=True, slots=True, kw_only=True)
class NewTurn:
    """A question the assistant answers, in a new conversation (`new`) or one it continues."""

    principal: Principal
    customer_ref: str
    conversation_id: uuid.UUID
    new: bool  # the conversation's first turn: its row is written with it
    seen: int  # the conversation's last message when the question came (0: new)
    audit_id: uuid.UUID  # this request's audit row
    question: str
    account_ref: str
    locale: Locale  # the question's language (the conversation's, for a new one)
    thread: Thread


class TurnRecorded(msgspec.Struct, frozen=True, kw_only=True):
    """A turn written: the customer's question's and the answer's numbers, and the status after it."""

    customer_seq: int
    assistant_seq: int
    status: ConversationStatus


@dataclass(frozen=True, slots=True, kw_only=True)
class NotSaved:
    """A turn that could not be written: the customer is told, in the answer's language."""

    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Transcript:
    """A page of a conversation: its latest messages, or those before `?before=`."""

    conversation: Conversation
    messages: list[Message]
    earlier: int | None  # `before` of the page before this one; None: this page begins the conversation


@dataclass(frozen=True, slots=True, kw_only=True)
class Polled:
    """A live feed's read: the conversation now, and its messages after the last one the page has."""

    conversation: Conversation
    messages: list[Message]


@dataclass(frozen=True, slots=True, kw_only=True)
class Sent:
    """A customer's message stored for the person who answers the conversation."""

    seq: int
    status: ConversationStatus


@dataclass(frozen=True, slots=True, kw_only=True)
class Taken:
    waited: timedelta


@dataclass(frozen=True, slots=True, kw_only=True)
class TakeRefused:
    """The take lost: the conversation as it is now (with another agent, or not waiting any more)."""

    conversation: Conversation
