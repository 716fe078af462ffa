"""What the model may say: a plan, an ordered list of typed claims from a closed set.

The model never writes the customer's text. It picks claims ("the change, up"; "driver 2, down";
"the payment status: unpaid") under a JSON schema enforced while decoding; each claim's arguments
are checked here against the facts, and the service says the accepted claims in reviewed wordings
(prompts/locales/<locale>/claims.j2), filled from the facts. There is no way to write a figure, a date, a
merchant or a bank action: the set of things that can be said is closed, so no paraphrase can
contradict the facts (DESIGN.md, rule 2).

Each intent names its lead claim (what answers the question, said first) and the claims that fit it;
a plan that fails a check, or misses its lead, is refused with a typed reason and never cached.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal, NamedTuple, get_args

import msgspec

from app.domain.facts import BillFacts, PaymentStatus
from app.domain.reasons import Reason
from app.domain.slots import MAX_DRIVERS, items
from app.domain.vocabulary import Intent

MAX_CLAIMS = 5

Direction = Literal["up", "down", "same"]
DriverDirection = Literal["up", "down"]
Action = Literal["pay", "agent"]
Wording = Literal[1, 2]  # every claim type has these reviewed wordings in each locale
WORDINGS: tuple[Wording, ...] = get_args(Wording)


class Claim(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True, tag_field="claim"
):
    wording: Wording = 1  # which reviewed wording says it


class NewBalance(Claim, frozen=True, tag="new_balance"):
    pass


class Change(Claim, frozen=True, tag="change"):
    direction: Direction  # must be the sign of the bill's difference


class DriverClaim(Claim, frozen=True, tag="driver"):
    n: int  # the driver's number in FACTS (largest first)
    direction: DriverDirection  # must be the sign of that driver's amount


class Transaction(Claim, frozen=True, tag="transaction"):
    n: int  # the transaction's number in FACTS


class FeesInterest(Claim, frozen=True, tag="fees_interest"):
    pass


class PaymentStatusClaim(Claim, frozen=True, tag="payment_status"):
    status: PaymentStatus  # must be the facts' status


class PaidSinceClose(Claim, frozen=True, tag="paid_since_close"):
    pass


class StillToPay(Claim, frozen=True, tag="still_to_pay"):
    pass


class MinimumDue(Claim, frozen=True, tag="minimum_due"):
    pass


class PeriodClaim(Claim, frozen=True, tag="period"):
    pass


class NextStep(Claim, frozen=True, tag="next_step"):
    action: Action


class NoAnswer(Claim, frozen=True, tag="no_answer"):
    pass


AnyClaim = (
    NewBalance
    | Change
    | DriverClaim
    | Transaction
    | FeesInterest
    | PaymentStatusClaim
    | PaidSinceClose
    | StillToPay
    | MinimumDue
    | PeriodClaim
    | NextStep
    | NoAnswer
)
CLAIM_TYPES: dict[str, type[Claim]] = {str(cls.__struct_config__.tag): cls for cls in get_args(AnyClaim)}


class Plan(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    claims: list[AnyClaim]


# What answers each intent (said first), and what else fits it. Out-of-scope questions never reach
# the model. The lead is one of a set: a charge question is answered by a transaction, or by saying
# the statement does not show it.
LEAD: dict[Intent, frozenset[str]] = {
    "bill_change": frozenset({"change"}),
    "charge": frozenset({"transaction", "no_answer"}),
    "fees_interest": frozenset({"fees_interest"}),
    "payment": frozenset({"payment_status"}),
}
_ANY_INTENT = ("new_balance", "period", "next_step")  # fit every answer
FITS: dict[Intent, frozenset[str]] = {
    "bill_change": frozenset(
        ("change", "driver", "payment_status", "still_to_pay", "minimum_due", "fees_interest", *_ANY_INTENT)
    ),
    "charge": frozenset(("transaction", "driver", "no_answer", *_ANY_INTENT)),
    "fees_interest": frozenset(("fees_interest", "transaction", *_ANY_INTENT)),
    "payment": frozenset(("payment_status", "paid_since_close", "still_to_pay", "minimum_due", *_ANY_INTENT)),
}
# A claim whose content an earlier one already said is left out ("nothing is said twice").
COVERED_BY: dict[str, frozenset[str]] = {"new_balance": frozenset({"change"})}


def kind_of(claim: Claim) -> str:
    """The claim's type, as the model writes it ("driver")."""
    return str(claim.__struct_config__.tag)


def sign_word(amount: Any) -> Direction:
    return "up" if amount > 0 else "down" if amount < 0 else "same"


def fee_items(facts: BillFacts) -> list[int]:
    """The numbers (1-based, as in FACTS) of the statement's fee and interest transactions."""
    return [i for i, e in enumerate(items(facts), start=1) if e.kind in ("fee", "interest")]


class Allowed(NamedTuple):
    """What these facts and this question let a plan say, claim by claim: the key of the schema the
    engine decodes under (app/domain/plan_schema.py), so that only true claims can be written."""

    intent: Intent
    direction: Direction  # the bill's
    drivers: tuple[DriverDirection, ...]  # each listed driver's, in FACTS order
    transactions: tuple[int, ...]  # the transaction numbers a claim may name
    status: PaymentStatus
    no_answer: bool  # "the facts do not answer this" is true: a charge question that names nothing listed
    cause_first: bool  # a bill change names a driver right after the change


class PlanCheck:
    """Checks one plan's claims as they arrive, against one answer's facts, intent and question.

    `check` gives each claim's verdict on its own (arguments against the facts, fit with the intent,
    applicability); `missing` says, once the plan has ended, what its intent needed and never got."""

    def __init__(self, facts: BillFacts, intent: Intent, focus: Iterable[str] = ()) -> None:
        self.facts, self.intent = facts, intent
        self.items = items(facts)
        # The transactions the question names: a charge answer must be about one of them.
        wanted = {label.lower() for label in focus}
        self.focus = {i for i, e in enumerate(self.items, start=1) if e.label.lower() in wanted}
        self.seen: list[Claim] = []

    def check(self, claim: Claim) -> Reason | None:
        kind = kind_of(claim)
        facts, status = self.facts, self.facts.payment.status
        if len(self.seen) == MAX_CLAIMS:
            return Reason(rule="invalid_plan", detail=f"more than {MAX_CLAIMS} claims")
        if kind not in FITS[self.intent]:
            return Reason(rule="off_intent", detail=f"{kind} for {self.intent}")
        if isinstance(claim, Change) and claim.direction != sign_word(facts.difference):
            return Reason(
                rule="wrong_direction", detail=f"{claim.direction}, the bill went {sign_word(facts.difference)}"
            )
        if isinstance(claim, DriverClaim):
            if not 1 <= claim.n <= min(len(facts.drivers), MAX_DRIVERS):
                return Reason(rule="unknown_index", detail=f"driver {claim.n}")
            actual = sign_word(facts.drivers[claim.n - 1].amount)
            if claim.direction != actual:
                return Reason(rule="wrong_driver", detail=f"driver {claim.n} went {actual}, not {claim.direction}")
        if isinstance(claim, Transaction):
            if not 1 <= claim.n <= len(self.items):
                return Reason(rule="unknown_index", detail=f"transaction {claim.n}")
            if self.focus and claim.n not in self.focus:
                return Reason(rule="wrong_subject", detail=f"transaction {claim.n} is not the one asked about")
            if self.intent == "fees_interest" and claim.n not in fee_items(facts):
                return Reason(rule="wrong_subject", detail=f"transaction {claim.n} is no fee or interest")
        if isinstance(claim, PaymentStatusClaim) and claim.status != status:
            return Reason(rule="status_claim", detail=f"{claim.status}, the facts say {status}")
        if isinstance(claim, NoAnswer) and (self.focus or any(not isinstance(c, NextStep) for c in self.seen)):
            return Reason(rule="wrong_subject", detail="no_answer, but the facts answer it")
        if self.seen and isinstance(self.seen[0], NoAnswer) and not isinstance(claim, NextStep):
            return Reason(rule="wrong_subject", detail=f"{kind} after no_answer")
        pay = isinstance(claim, StillToPay | MinimumDue) or (isinstance(claim, NextStep) and claim.action == "pay")
        if status == "paid" and pay:
            return Reason(rule="not_applicable", detail=f"{kind}: the statement is paid in full")
        self.seen.append(claim)
        return None

    def missing(self) -> Reason | None:
        """What the plan lacks to be said: any claim at all, its intent's lead, a bill change's cause."""
        kinds = {kind_of(c) for c in self.seen}
        if not self.seen:
            return Reason(rule="empty")
        if not kinds & LEAD[self.intent]:
            return Reason(rule="missing_claim", detail="/".join(sorted(LEAD[self.intent])))
        if self.intent == "bill_change" and self.facts.difference != 0 and self.facts.drivers and "driver" not in kinds:
            return Reason(rule="missing_claim", detail="driver")
        return None

    def allowed(self) -> Allowed:
        facts, intent = self.facts, self.intent
        if self.focus:
            transactions = sorted(self.focus)
        elif intent == "fees_interest":
            transactions = fee_items(facts)
        else:
            transactions = list(range(1, len(self.items) + 1))
        return Allowed(
            intent=intent,
            direction=sign_word(facts.difference),
            drivers=tuple("up" if d.amount > 0 else "down" for d in facts.drivers[:MAX_DRIVERS]),
            transactions=tuple(transactions),
            status=facts.payment.status,
            no_answer=intent == "charge" and not self.focus,
            cause_first=intent == "bill_change" and bool(facts.difference) and bool(facts.drivers),
        )

    def ready(self) -> bool:
        """Whether the claims accepted so far may be said: nothing is said before the plan holds what
        its intent needs, so a plan that ends without it has shown nothing."""
        return self.missing() is None


def ordered(claims: Sequence[Claim], intent: Intent) -> list[Claim]:
    """The claims to say, in order: the lead first (the question decides what comes first), then the
    rest as planned; repeats and claims an earlier one already said are left out."""
    lead = [c for c in claims if kind_of(c) in LEAD[intent]][:1]
    said: list[Claim] = []
    for claim in [*lead, *(c for c in claims if c not in lead)]:
        covered = COVERED_BY.get(kind_of(claim), frozenset()) & {kind_of(c) for c in said}
        if not covered and not any(_same(claim, c) for c in said):
            said.append(claim)
    return said


def _same(a: Claim, b: Claim) -> bool:
    """The same statement, whatever its wording."""
    return msgspec.structs.replace(a, wording=1) == msgspec.structs.replace(b, wording=1)


_decode_claim: msgspec.json.Decoder[AnyClaim] = msgspec.json.Decoder(AnyClaim)


def decode_claim(raw: bytes | str) -> AnyClaim:
    """One claim object as the model wrote it; msgspec.ValidationError/DecodeError if it is none."""
    return _decode_claim.decode(raw)
