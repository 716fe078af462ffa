"""The typed messages a question moves through on its way to an answer: what was asked (`Ask`),
what is known about it once the records are read (`Turn`), and the events a conversation yields
(`Facts`, `Delta`*, `Replace`?, `Final`). Data only, and the answer built from a turn: the
collaborators live in the AnswerService."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import date

import msgspec

from app.answers.schemas import (
    ExplanationRequest,
    ExplanationResponse,
    PaymentOut,
    SaidClaim,
    SourceOut,
    StatementOut,
    TotalsOut,
    Usage,
)
from app.data.tenants import Principal
from app.domain.claims import AnyClaim
from app.domain.conversation import Thread
from app.domain.facts import BillFacts
from app.domain.knowledge import NO_QUOTES, Quotes
from app.domain.reasons import Reason
from app.domain.records import AccountHistory
from app.domain.understanding import Reading
from app.domain.vocabulary import Channel, HandoverReason, Intent, Locale, Origin, Source
from app.prompts import answer_version
from app.timing import Stopwatch


@dataclass(frozen=True, slots=True, kw_only=True)
class Ask:
    """One question, as a caller hands it to the answer service."""

    principal: Principal  # who asks: the tenant, from the credential
    request: ExplanationRequest
    channel: Channel
    today: date  # the as-of date when the request names none
    stopwatch: Stopwatch = field(default_factory=Stopwatch)
    # Only this customer's accounts (the chat widget's token); any other is NotFound.
    customer_ref: str | None = None
    # False asks the model again past the answer cache (the console's regenerate).
    use_cache: bool = True
    # This request's audit row, for a caller that links to it (a cache hit answers with the
    # original answer's id).
    audit_id: uuid.UUID = field(default_factory=uuid.uuid4)
    # "fill": the intent's canonical question (precompute, the fill after a miss), the only answers
    # cached; "job": an item of a batch job; "request": anyone else. Kept in the audit row.
    origin: Origin = "request"
    # A widget conversation's turn: what the turns before established (a follow-up takes its intent
    # and subject from them); clarifying and handing over happen only in a conversation.
    thread: Thread | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """A question once its records are read: the facts it is answered from."""

    ask: Ask
    level: int  # the admission and engine priority
    history: AccountHistory
    facts: BillFacts
    reading: Reading  # what the question was taken to be about (app/domain/understanding.py)
    locale: Locale
    as_of: date
    quotes: Quotes = NO_QUOTES  # the bank's passages the answer may quote (app/domain/knowledge.py)

    @property
    def intent(self) -> Intent:
        return self.reading.intent


# Events of a conversation, in this order: Facts, Delta*, Replace?, Final.
class Facts(msgspec.Struct, frozen=True):
    answer: ExplanationResponse  # totals, drivers, payment status; no text yet


class Delta(msgspec.Struct, frozen=True):
    text: str


class Replace(msgspec.Struct, frozen=True, kw_only=True):
    text: str  # the deterministic answer, instead of model text that failed validation
    reason: Reason


class Final(msgspec.Struct, frozen=True):
    answer: ExplanationResponse


ChatEvent = Facts | Delta | Replace | Final


async def final_answer(events: AsyncIterator[ChatEvent]) -> ExplanationResponse:
    """A conversation's audited answer, once it has ended."""
    answer = None
    async for event in events:  # to the end: admission is released as the conversation completes
        if isinstance(event, Final):
            answer = event.answer
    assert answer is not None, "a conversation always ends with its Final event"
    return answer


def respond(
    turn: Turn,
    *,
    explanation: str,
    source: Source,
    model: str | None,
    usage: Usage | None,
    plan: list[AnyClaim] | None = None,
    claims: list[SaidClaim] | None = None,
    choices: list[str] | None = None,
    handover: HandoverReason | None = None,
    sources: list[SourceOut] | None = None,
) -> ExplanationResponse:
    """The answer to a turn: its facts, with the text served and where it came from (the audit fills
    in the timings)."""
    facts, s = turn.facts, turn.facts.statement
    return ExplanationResponse(
        answer_id=str(turn.ask.audit_id),
        account_ref=facts.account_ref,
        currency=facts.currency,
        statement=StatementOut(
            period_start=s.period_start, period_end=s.period_end, due_date=s.due_date, minimum_due=s.minimum_due
        ),
        totals=TotalsOut(current=s.new_balance, previous=facts.previous_balance, difference=facts.difference),
        drivers=facts.drivers,
        payment=PaymentOut(
            status=facts.payment.status,
            paid_amount=facts.payment.paid_amount,
            outstanding=facts.payment.outstanding,
            as_of=facts.as_of,
        ),
        explanation=explanation,
        locale=turn.locale,
        source=source,
        intent=turn.intent,
        intents=list(turn.reading.all_intents) if len(turn.reading.all_intents) > 1 else None,
        prompt_version=answer_version(turn.ask.principal.policy),
        timings_ms={},  # the audit fills them in, as the answer is returned
        model=model,
        usage=usage,
        plan=plan,
        claims=claims,
        subjects=list(turn.reading.subjects) or None,
        choices=choices,
        handover=handover,
        sources=sources,
    )
