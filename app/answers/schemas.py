"""The explanation request and response, shared by every caller (JSON API, chat, console, batch)."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Literal

import msgspec

from app import locales
from app.domain.claims import AnyClaim
from app.domain.facts import Driver, PaymentStatus
from app.domain.vocabulary import REF_PATTERN, HandoverReason, Intent, Locale, Ref, Source

# A question: not blank (something besides the whitespace str.strip() takes away), and no C0/C1
# control character but tab and newline, which a multi-line question may hold. One definition for
# the validator (msgspec: Python's re.search) and the OpenAPI document (ECMA-262): `^`, `$` and these
# classes mean the same in both (Python's `$` also matches before a final newline, which is allowed
# anyway). Leading blanks are a class of their own, apart from the first other character: no backtracking.
_BLANKS = r"\t\n \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_VISIBLE = r"[^\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
QUESTION_PATTERN = rf"^[{_BLANKS}]*{_VISIBLE}[^\x00-\x08\x0b-\x1f\x7f-\x9f]*$"
Question = Annotated[str, msgspec.Meta(min_length=1, max_length=1000, pattern=QUESTION_PATTERN)]

# What a refused pattern means, for error messages (msgspec's own name the regex).
_PATTERN_WORDS = {
    REF_PATTERN: "without control characters",
    QUESTION_PATTERN: "not blank, without control characters but tab and newline",
}


# A request's locale: one with a folder (app/locales.py). The OpenAPI document lists the folders'
# locales as the service starts; `__post_init__` checks against them as they are now.
RequestLocale = Annotated[Locale, msgspec.Meta(extra_json_schema={"enum": list(locales.locales())})]


def in_words(message: str) -> str:
    """A validation message with each pattern above said in words."""
    for pattern, words in _PATTERN_WORDS.items():
        message = message.replace(f"matching regex {pattern!r}", words)
    return message


class AccountQuestion(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """A question about one account's latest statement."""

    account_ref: Ref
    question: Question
    as_of: date | None = None
    locale: RequestLocale | None = None

    def __post_init__(self) -> None:
        locales.check(self.locale)  # one with a folder (app/locales.py): a 400 otherwise


class ChatRequest(AccountQuestion, forbid_unknown_fields=True, frozen=True):
    """The chat widget's question: a turn of a conversation (a new one when no id is given; the
    first event of the answer carries its id)."""

    conversation_id: uuid.UUID | None = None
    # The page's own locale, as it set the widget's: a question in its language is answered the way
    # the page says it ("en-GB", not "en"), whatever language the conversation spoke last (`locale`).
    page_locale: RequestLocale | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        locales.check(self.page_locale)


class ExplanationRequest(AccountQuestion, forbid_unknown_fields=True, frozen=True):
    statement_period_end: date | None = None
    # Who waits for the answer: a live integration (api) or a job (batch, last in line).
    channel: Literal["api", "batch"] = "api"


class StatementOut(msgspec.Struct, frozen=True, kw_only=True):
    period_start: date
    period_end: date
    due_date: date
    minimum_due: Decimal


class TotalsOut(msgspec.Struct, frozen=True, kw_only=True):
    current: Decimal
    previous: Decimal
    difference: Decimal


class PaymentOut(msgspec.Struct, frozen=True, kw_only=True):
    status: PaymentStatus
    paid_amount: Decimal
    outstanding: Decimal
    as_of: date


class Usage(msgspec.Struct, frozen=True, kw_only=True):
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int


class SaidClaim(msgspec.Struct, frozen=True, kw_only=True):
    """One claim of the answer as it was said: what it is, the facts it states, its sentences."""

    claim: Annotated[AnyClaim, msgspec.Meta(description="The claim's type (`claim`) and arguments, as planned.")]
    values: Annotated[
        dict[str, str],
        msgspec.Meta(
            description="The facts it states, by name (minimum_due, due_date, driver_1, driver_1_amount, item_2_date,"
            " status, ...): amounts as decimal strings, signed as they moved the balance (a payment as paid), dates"
            " in ISO form, labels as on the statement."
        ),
    ]
    text: Annotated[str, msgspec.Meta(description="The sentences it produced, in the answer's language.")]


class SourceOut(msgspec.Struct, frozen=True, kw_only=True):
    """An article of the bank's help content the answer quotes (verbatim)."""

    id: str  # the bank's article id
    title: str
    version: int  # the live version quoted: the console shows exactly that text


class ExplanationResponse(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True):
    answer_id: str
    account_ref: str
    currency: str
    statement: StatementOut
    totals: TotalsOut
    drivers: list[Driver]
    payment: PaymentOut
    explanation: str
    locale: Locale
    source: Source
    intent: Intent
    prompt_version: str
    timings_ms: dict[str, float]
    # Every intent a multi-part question asks, in its order (`intent` is the first); absent for one.
    intents: list[Intent] | None = None
    model: str | None = None  # present when the engine was asked
    usage: Usage | None = None
    # The claims the model planned, as checked (app/domain/plan.py): what a model answer says, or
    # the plan that was refused (the reason is in the audit row).
    plan: list[AnyClaim] | None = None
    # What the served answer says, claim by claim, resolved against the facts (absent for a
    # deterministic answer): the model's answer, or a cached one.
    claims: list[SaidClaim] | None = None
    # The statement lines (merchants, fees) the question was taken to be about: named, or, in a
    # conversation, taken from the turn before.
    subjects: list[str] | None = None
    # A conversation's clarifying question: the lines it could mean (the widget shows them as buttons).
    choices: list[str] | None = None
    # A conversation handed to an agent by this turn, and why.
    handover: HandoverReason | None = None
    # The bank's help articles the answer quotes, in the order quoted.
    sources: list[SourceOut] | None = None


class BatchItem(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    account_ref: Ref
    question: Question | None = None  # default: the bill change
    statement_period_end: date | None = None
    as_of: date | None = None
    locale: RequestLocale | None = None

    def __post_init__(self) -> None:
        locales.check(self.locale)


class BatchRequest(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    items: Annotated[list[BatchItem], msgspec.Meta(min_length=1, max_length=1000)]


class JobAccepted(msgspec.Struct, frozen=True, kw_only=True):
    job_id: str
    total: int
    status: str


class SessionRequest(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    customer_ref: Ref


class SessionOut(msgspec.Struct, frozen=True, kw_only=True):
    token: str  # for the chat widget: Authorization: Bearer <token>
    expires_at: datetime
    customer_ref: str
    locale: Locale  # the customer's language: the widget's, unless the page says otherwise


class DriverLine(msgspec.Struct, frozen=True, kw_only=True):
    label: str  # in the customer's words, as the answers say it
    amount: str  # formatted, signed


class FactsDisplay(msgspec.Struct, frozen=True, kw_only=True):
    """The numbers as a customer reads them (formatted on the server, never recomputed in a browser)."""

    current: str
    previous: str
    difference: str
    minimum_due: str
    due_date: str
    status: str
    drivers: list[DriverLine]


class ChatFacts(msgspec.Struct, frozen=True, kw_only=True):
    """The chat stream's first event: every number, before any model text."""

    account_ref: str
    currency: str
    locale: Locale
    intent: Intent
    statement: StatementOut
    totals: TotalsOut
    drivers: list[Driver]
    payment: PaymentOut
    display: FactsDisplay
    # The bank's help articles the answer quotes (a transcript's answer keeps them; the first event of a
    # stream, sent before the answer, has none).
    sources: list[SourceOut] | None = None
