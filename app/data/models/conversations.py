"""The widget's conversations: their turns, and who answers them (the assistant, or an agent after a
handover). Scoped to a tenant and one of its customers, like every customer's row."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, DateTime, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.dialects.postgresql import JSONB, UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.data.models.base import Base, created_at_column, in_
from app.domain.vocabulary import CONVERSATION_STATUSES, HANDOVER_REASONS, ROLES


class Conversation(Base):
    __tablename__ = "conversations"
    __table_args__ = (
        CheckConstraint(in_("status", CONVERSATION_STATUSES), name="status"),
        CheckConstraint(in_("handover_reason", HANDOVER_REASONS), name="handover_reason"),
        # The console's queue: a bank's waiting conversations, longest waiting first.
        Index("ix_conversations_tenant_id_status_waiting_since", "tenant_id", "status", "waiting_since"),
    )

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    customer_ref: Mapped[str] = mapped_column(String(64))  # from the customer's session token
    locale: Mapped[str] = mapped_column(String(8))  # the customer's, when a message does not say
    status: Mapped[str] = mapped_column(String(8), server_default="bot")
    handover_reason: Mapped[str | None] = mapped_column(String(16))
    waiting_since: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    agent_id: Mapped[int | None] = mapped_column(ForeignKey("agents.id", ondelete="SET NULL"))
    taken_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Until when the agent who has it is writing (the console's typing mark; it lapses on its own).
    agent_writing_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_seq: Mapped[int] = mapped_column(Integer, server_default=text("0"))  # the latest message's number
    created_at: Mapped[datetime] = created_at_column()
    # The last message's time: the retention counts from it (`conversations purge`).
    updated_at: Mapped[datetime] = created_at_column()


class ConversationMessage(Base):
    __tablename__ = "conversation_messages"
    __table_args__ = (CheckConstraint(in_("role", ROLES), name="role"),)

    conversation_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)  # 1, 2, …: the order both sides read
    role: Mapped[str] = mapped_column(String(9))
    text: Mapped[str] = mapped_column(Text)
    account_ref: Mapped[str | None] = mapped_column(String(64))  # the account a customer's question was about
    # An assistant turn: its audit row, the facts shown beside it (app/answers/schemas.py ChatFacts),
    # what it took the question to be (the next follow-up's context), and the choices of a clarifying question.
    answer_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    facts: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    context: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    choices: Mapped[list[str] | None] = mapped_column(JSONB)
    agent_id: Mapped[int | None] = mapped_column(ForeignKey("agents.id", ondelete="SET NULL"))
    # The language the message was written or answered in (its `lang` in the console); none before 0021.
    locale: Mapped[str | None] = mapped_column(String(16))
    # An answer's own audit row: a cached answer keeps the canonical answer's `answer_id`, while this row
    # holds the customer's question and says it was served from the cache.
    audit_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    created_at: Mapped[datetime] = created_at_column()
