"""The conversation service: every business step of a widget conversation, each in its own
transaction, scoped by the tenant (and, for a customer, by the customer: another customer's or another
bank's conversation is exactly as unknown as a missing one, NotFound). Each write wakes the
conversation's live feeds in this process (wakeups.py)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta

import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app import locales
from app.answers.schemas import ExplanationResponse
from app.conversations.recording import record_turn
from app.conversations.threads import thread_of
from app.conversations.values import (
    Agent,
    Continued,
    NewTurn,
    NotSaved,
    NotYours,
    Polled,
    Sent,
    Taken,
    TakeRefused,
    Transcript,
    TurnRecorded,
)
from app.conversations.wakeups import Wakeups
from app.data import conversations, handovers
from app.data.conversations import Conversation
from app.data.customers import customer_accounts
from app.data.database import autocommit, connection
from app.data.handovers import Waiting
from app.domain.message_limits import MessageCaps, Refusal, refusal
from app.domain.understanding import language_of
from app.errors import NotFound
from app.metrics import HANDOVER_WAIT_BY
from app.prompts import render_notice

# A transcript is shown a page at a time, the latest first, whatever its length: a page, the JSON and a
# feed's first load stay small (issue 34: 3,000 messages made a 3.46 MB console page).
PAGE = 50
# How long an agent's typing mark lasts: the console renews it every couple of seconds while they type.
WRITING_S = 5.0


async def _found(
    conn: AsyncConnection, tenant_id: int, cid: uuid.UUID, customer_ref: str | None = None, *, lock: bool = False
) -> Conversation:
    found = await conversations.find(conn, tenant_id, cid, customer_ref, lock=lock)
    if found is None:
        raise NotFound(f"conversation {cid} not found")
    return found


@dataclass(frozen=True, slots=True)
class ConversationService:
    db: AsyncEngine
    wakeups: Wakeups

    async def find(self, tenant_id: int, cid: uuid.UUID, customer_ref: str | None = None) -> Conversation:
        """The tenant's conversation (the customer's own, when `customer_ref` is given); NotFound."""
        async with autocommit(self.db) as conn:
            return await _found(conn, tenant_id, cid, customer_ref)

    async def continuing(self, tenant_id: int, customer_ref: str, cid: uuid.UUID) -> Continued:
        """The customer's conversation their next message continues, with the assistant's thread."""
        async with autocommit(self.db) as conn:
            found = await _found(conn, tenant_id, cid, customer_ref)
            if found.status != "bot":  # a person answers now: no thread
                return Continued(conversation=found, thread=None)
            return Continued(
                conversation=found, thread=thread_of(await conversations.last_context(conn, tenant_id, cid))
            )

    async def record(
        self, turn: NewTurn, answer: ExplanationResponse, facts: msgspec.Struct
    ) -> TurnRecorded | NotSaved:
        """Starts or continues the conversation with the audited answer's turn (app/conversations/recording.py)."""
        return await record_turn(self.db, self.wakeups, turn, answer, facts)

    async def transcript(
        self, tenant_id: int, cid: uuid.UUID, *, customer_ref: str | None = None, before: int | None = None
    ) -> Transcript:
        """A page of the conversation: its latest PAGE messages, or those before number `before`."""
        async with autocommit(self.db) as conn:
            found = await _found(conn, tenant_id, cid, customer_ref)
            page = await conversations.latest(conn, tenant_id, cid, PAGE, before)
        earlier = page[0].seq if page and page[0].seq > 1 else None  # messages are numbered from 1
        return Transcript(conversation=found, messages=page, earlier=earlier)

    async def poll(
        self, tenant_id: int, cid: uuid.UUID, after: int, customer_ref: str | None = None, *, first: bool = False
    ) -> Polled | None:
        """A live feed's read: the messages after `after` (at most PAGE; on the `first` read, only the
        latest PAGE), and the conversation; None once it is gone (purged)."""
        async with autocommit(self.db) as conn:
            found = await conversations.find(conn, tenant_id, cid, customer_ref)
            if found is None:
                return None
            if first:
                after = max(after, found.last_seq - PAGE)
            new = await conversations.messages(conn, tenant_id, cid, after, PAGE)
        return Polled(conversation=found, messages=new)

    async def to_person(
        self, tenant_id: int, customer_ref: str, cid: uuid.UUID, question: str, account_ref: str, caps: MessageCaps
    ) -> Sent | Refusal:
        """Stores a customer's message for the person who answers the conversation (waiting, or with an
        agent), about one of the customer's own accounts (NotFound), within the conversation's caps."""
        async with connection(self.db, transaction=True) as conn:
            # The row is held while its messages are counted: two messages at once cannot both take the last place.
            found = await _found(conn, tenant_id, cid, customer_ref, lock=True)
            owned = await customer_accounts(conn, tenant_id, customer_ref)
            if account_ref not in {a.account_ref for a in owned}:
                raise NotFound(f"account {account_ref!r} not found")
            refused = refusal(await conversations.pace(conn, tenant_id, cid), caps, len(question))
            if refused is not None:
                return refused
            # Said the way the conversation says that language ("en" in an "en-XA" conversation is "en-XA").
            locale = locales.closest(found.locale, language_of(question)) or found.locale
            seq = await conversations.append(
                conn, tenant_id, cid, "customer", question, locale=locale, account_ref=account_ref
            )
        self.wakeups.wake(cid)
        return Sent(seq=seq, status=found.status)

    async def queue(self, tenant_id: int) -> list[Waiting]:
        """The bank's conversations waiting for an agent, longest waiting first."""
        async with autocommit(self.db) as conn:
            return await handovers.queue(conn, tenant_id)

    async def take(self, agent: Agent, cid: uuid.UUID) -> Taken | TakeRefused:
        """The agent takes a waiting conversation; of two agents taking it at once exactly one wins."""
        tenant = agent.tenant_id
        # The take and its notice commit together: the customer never reads "joined" for a lost take.
        async with connection(self.db, transaction=True) as conn:
            waited = await handovers.take(conn, tenant, cid, agent.agent_id)
            found = await _found(conn, tenant, cid)
            if waited is None:
                return TakeRefused(conversation=found)
            notice = render_notice("joined", found.locale, name=agent.display_name)
            await conversations.append(
                conn, tenant, cid, "system", notice, locale=found.locale, agent_id=agent.agent_id
            )
        HANDOVER_WAIT_BY(agent.tenant_slug).observe(waited.total_seconds())
        self.wakeups.wake(cid)
        return Taken(waited=waited)

    async def mine(self, agent: Agent, cid: uuid.UUID) -> Conversation:
        """The conversation, if this agent has it; NotYours otherwise."""
        found = await self.find(agent.tenant_id, cid)
        _check_mine(found, agent)
        return found

    async def reply(self, agent: Agent, cid: uuid.UUID, said: str) -> int:
        """The agent's reply to the customer; only the agent who has the conversation may (NotYours)."""
        async with connection(self.db, transaction=True) as conn:
            found = await _found(conn, agent.tenant_id, cid)
            _check_mine(found, agent)
            locale = locales.closest(found.locale, language_of(said)) or found.locale
            seq = await conversations.append(
                conn, agent.tenant_id, cid, "agent", said, locale=locale, agent_id=agent.agent_id
            )
        self.wakeups.wake(cid)
        return seq

    async def writing(self, agent: Agent, cid: uuid.UUID) -> None:
        """The agent who has the conversation is typing: the customer's feed says so for WRITING_S
        (the console says it again while the agent goes on); NotYours unless they have it."""
        async with autocommit(self.db) as conn:
            if not await handovers.mark_writing(conn, agent.tenant_id, cid, agent.agent_id, WRITING_S):
                await _found(conn, agent.tenant_id, cid)  # another bank's: not found
                raise NotYours(cid)
        self.wakeups.wake(cid)

    async def release(self, agent: Agent, cid: uuid.UUID) -> None:
        """The agent hands the conversation back to the assistant (NotYours unless they have it)."""
        async with connection(self.db, transaction=True) as conn:
            released = await handovers.release(conn, agent.tenant_id, cid, agent.agent_id)
            found = await _found(conn, agent.tenant_id, cid)
            if not released:
                raise NotYours(cid)
            notice = render_notice("back", found.locale)
            await conversations.append(conn, agent.tenant_id, cid, "system", notice, locale=found.locale)
        self.wakeups.wake(cid)


def _check_mine(found: Conversation, agent: Agent) -> None:
    if found.status != "agent" or found.agent_id != agent.agent_id:
        raise NotYours(found.id)


async def purge(conn: AsyncConnection, older_than: timedelta) -> int:
    """Deletes every bank's conversations with no message for `older_than`, bank by bank; how many."""
    return sum([await conversations.purge(conn, tenant, older_than) for tenant in await conversations.tenants(conn)])
