"""What a widget conversation's turn calls for besides an answer: asking back when the question could
mean two lines, handing over to a person when one is asked for, when the need is one only a person
serves, or when the assistant could not answer twice in a row."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Literal

from app.domain.claims import Claim
from app.domain.facts import BillFacts
from app.domain.understanding import Context, Line, Reading
from app.domain.vocabulary import HandoverReason

Step = Literal["clarify"] | HandoverReason


@dataclass(frozen=True, slots=True)
class Thread:
    """What a conversation's earlier turns hand the next one."""

    context: Context | None  # what the latest answered turn was about: a follow-up's intent and subject
    previous_question: str | None  # the customer's last question, for the prompt
    unanswered: bool  # the latest turn was a polite refusal
    said: tuple[Claim, ...] = ()  # the claims the conversation's answers said about one statement
    said_about: str | None = None  # that statement (`statement_key`)


def next_step(reading: Reading, thread: Thread) -> Step | None:
    """None: answer the question."""
    if reading.handover:
        return "requested"
    if len(reading.choices) >= 2:
        return "clarify"
    if reading.intent == "out_of_scope":
        if reading.certain:  # a need the rules know (a credit limit, a loan): a person serves it
            return "out_of_scope"
        if thread.unanswered:
            return "fallbacks"
    return None


def statement_key(account_ref: str, period_end: date) -> str:
    """Which statement a conversation's said claims are about: they hold for it alone."""
    return f"{account_ref}:{period_end.isoformat()}"


def statement_lines(facts: BillFacts) -> list[Line]:
    """What a question can point at: the statement's lines by label, and its single lines named."""
    lines = [Line(label=t.label, kind=t.kind, amount=t.amount) for t in facts.totals if t.label]
    return lines + [Line(label=e.label, kind=e.kind, amount=e.amount) for e in facts.entries if e.label]
