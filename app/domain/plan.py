"""What the model may say, checked: a plan, an ordered list of typed claims from a closed set
(app/domain/claims.py).

The model never writes the customer's text. It picks claims ("the change, up"; "driver 2, down";
"the payment status: unpaid") under a JSON schema enforced while decoding; each claim's arguments
are checked here against the facts, and the service says the accepted claims in reviewed wordings
(prompts/locales/<locale>/claims.j2), filled from the facts. There is no way to write a figure, a date, a
merchant or a bank action: the set of things that can be said is closed, so no paraphrase can
contradict the facts (DESIGN.md, rule 2).

What a plan must hold is the service's decision (app/domain/answer_policy.py: the required claims,
which begin every plan); without one, each intent names its lead claim. What fits each intent bounds
the rest. A plan that fails a check, or misses what it must hold, is refused with a typed reason and
never cached.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import msgspec

from app.domain.claims import (
    MAX_ADDED,
    MAX_CLAIMS,
    Change,
    Claim,
    Direction,
    DriverClaim,
    DriverDirection,
    MinimumDue,
    NextStep,
    NoAnswer,
    PassageClaim,
    PaymentStatusClaim,
    StillToPay,
    Transaction,
    kind_of,
    sign_word,
)
from app.domain.facts import BillFacts, PaymentStatus
from app.domain.reasons import Detail, Reason, Value
from app.domain.slots import MAX_DRIVERS, items
from app.domain.vocabulary import Intent

# What answers each intent (said first), and what else fits it. Out-of-scope questions never reach
# the model. The lead is one of a set: a charge question is answered by a transaction, or by saying
# the statement does not show it.
LEAD: dict[Intent, frozenset[str]] = {
    "bill_change": frozenset({"change"}),
    "charge": frozenset({"transaction", "no_answer"}),
    "fees_interest": frozenset({"fees_interest"}),
    "payment": frozenset({"payment_status"}),
    "policy": frozenset({"passage", "no_answer"}),
}
_ANY_INTENT = ("new_balance", "period", "next_step")  # fit every answer
FITS: dict[Intent, frozenset[str]] = {
    "bill_change": frozenset(
        ("change", "driver", "payment_status", "still_to_pay", "minimum_due", "fees_interest", *_ANY_INTENT)
    ),
    "charge": frozenset(("transaction", "driver", "no_answer", *_ANY_INTENT)),
    "fees_interest": frozenset(
        ("fees_interest", "transaction", "payment_status", "still_to_pay", "minimum_due", *_ANY_INTENT)
    ),
    "payment": frozenset(("payment_status", "paid_since_close", "still_to_pay", "minimum_due", *_ANY_INTENT)),
    # A policy answer is the bank's passage, or that its help content does not say; and a way on.
    "policy": frozenset(("passage", "no_answer", "next_step")),
}
# A claim whose content an earlier one already said is left out ("nothing is said twice").
COVERED_BY: dict[str, frozenset[str]] = {"new_balance": frozenset({"change"})}


def named_items(facts: BillFacts, labels: Iterable[str]) -> set[int]:
    """The numbers (1-based, as in FACTS) of the transactions with these labels: those a question names."""
    wanted = {label.lower() for label in labels}
    return {i for i, e in enumerate(items(facts), start=1) if e.label.lower() in wanted}


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
    cause_first: bool  # a bill change names a driver right after the change (no answer policy only)
    intents: tuple[Intent, ...] = ()  # every intent the question asks (the kinds that fit are their union)
    # The claims every plan begins with (app/domain/answer_policy.py), in order; None: no policy, the
    # intent's lead first.
    required: tuple[Claim, ...] | None = None
    said: tuple[Claim, ...] = ()  # said earlier in the conversation: not offered again
    limit: int = MAX_CLAIMS  # claims in one plan
    passages: int = 0  # the bank's passages offered (a policy question's candidates)


class PlanCheck:
    """Checks one plan's claims as they arrive, against one answer's facts, intent and question.

    `check` gives each claim's verdict on its own (arguments against the facts, fit with the intents,
    applicability); `missing` says, once the plan has ended, what it needed and never got: the claims
    the answer policy requires (`required`), or without one, its intent's lead."""

    def __init__(
        self,
        facts: BillFacts,
        intent: Intent,
        focus: Iterable[str] = (),
        *,
        intents: Sequence[Intent] = (),
        required: Sequence[Claim] | None = None,
        said: Sequence[Claim] = (),
        passages: int = 0,
    ) -> None:
        self.facts, self.intent = facts, intent
        self.passages = passages if "policy" in (intent, *intents) else 0  # how many a passage claim may name
        self.intents: tuple[Intent, ...] = tuple(dict.fromkeys((intent, *intents)))
        self.fits = frozenset().union(*(FITS[i] for i in self.intents if i in FITS))
        self.items = items(facts)
        self.focus = named_items(facts, focus)  # a charge answer must be about one of them
        self.required = tuple(required) if required is not None else None
        self.said = tuple(said)
        self.limit = max(MAX_CLAIMS, len(self.required or ()) + MAX_ADDED)  # claims in one plan
        self.seen: list[Claim] = []
        self._cause_first = intent == "bill_change" and bool(facts.difference) and bool(facts.drivers)

    @property
    def transactions(self) -> list[int]:
        """The transactions a claim may name: those asked about, or the fees of a fees question."""
        if self.focus:
            return sorted(self.focus)
        if "fees_interest" in self.intents and "charge" not in self.intents:
            return fee_items(self.facts)
        return list(range(1, len(self.items) + 1))

    @property
    def no_answer(self) -> bool:
        """Whether "the facts do not answer this" can be true, nothing being required: a charge question
        naming nothing, or a policy question (the model may find that none of the passages fits)."""
        return self.intent in ("charge", "policy") and not self.focus and not self.required

    def check(self, claim: Claim) -> Reason | None:
        kind = kind_of(claim)
        facts, status = self.facts, self.facts.payment.status
        if len(self.seen) == self.limit:
            return Reason(rule="invalid_plan", detail="claims_over", values={"limit": self.limit})
        if kind not in self.fits and not any(same_claim(claim, r) for r in self.required or ()):
            return Reason(rule="off_intent", detail="claim_for", values={"kind": kind, "intents": list(self.intents)})
        if isinstance(claim, Change) and claim.direction != sign_word(facts.difference):
            went = sign_word(facts.difference)
            return Reason(rule="wrong_direction", detail="bill_went", values={"claimed": claim.direction, "went": went})
        if isinstance(claim, DriverClaim):
            if not 1 <= claim.n <= min(len(facts.drivers), MAX_DRIVERS):
                return Reason(rule="unknown_index", detail="driver", values={"n": claim.n})
            actual = sign_word(facts.drivers[claim.n - 1].amount)
            if claim.direction != actual:
                values: dict[str, Value] = {"n": claim.n, "went": actual, "claimed": claim.direction}
                return Reason(rule="wrong_driver", detail="driver_went", values=values)
        if isinstance(claim, Transaction):
            if not 1 <= claim.n <= len(self.items):
                return Reason(rule="unknown_index", detail="transaction", values={"n": claim.n})
            if claim.n not in self.transactions:
                what: Detail = "not_asked" if self.focus else "not_a_fee"
                return Reason(rule="wrong_subject", detail=what, values={"n": claim.n})
        if isinstance(claim, PassageClaim) and not 1 <= claim.n <= self.passages:
            return Reason(rule="unknown_index", detail="passage", values={"n": claim.n})
        if isinstance(claim, PaymentStatusClaim) and claim.status != status:
            return Reason(
                rule="status_claim", detail="status_said", values={"claimed_status": claim.status, "status": status}
            )
        if isinstance(claim, NoAnswer) and (not self.no_answer or any(not isinstance(c, NextStep) for c in self.seen)):
            return Reason(rule="wrong_subject", detail="facts_answer")
        if self.seen and isinstance(self.seen[0], NoAnswer) and not isinstance(claim, NextStep):
            return Reason(rule="wrong_subject", detail="after_no_answer", values={"kind": kind})
        pay = isinstance(claim, StillToPay | MinimumDue) or (isinstance(claim, NextStep) and claim.action == "pay")
        if status == "paid" and pay:
            return Reason(rule="not_applicable", detail="paid_in_full", values={"kind": kind})
        self.seen.append(claim)
        return None

    def missing(self) -> Reason | None:
        """What the plan lacks to be said: any claim at all, a required claim, or without an answer
        policy, its intent's lead and a bill change's cause."""
        kinds = {kind_of(c) for c in self.seen}
        if not self.seen:
            return Reason(rule="empty")
        if self.required is not None:
            for claim in self.required:
                if not any(same_claim(claim, c) for c in self.seen):
                    return Reason(rule="missing_claim", detail="lacks_claim", values=msgspec.to_builtins(claim))
            if self.required:
                return None
        if not kinds & LEAD[self.intent]:
            return Reason(rule="missing_claim", detail="lacks", values={"kinds": sorted(LEAD[self.intent])})
        if self.required is None and self._cause_first and "driver" not in kinds:
            return Reason(rule="missing_claim", detail="lacks", values={"kinds": ["driver"]})
        return None

    def allowed(self) -> Allowed:
        facts = self.facts
        return Allowed(
            intent=self.intent,
            direction=sign_word(facts.difference),
            drivers=tuple("up" if d.amount > 0 else "down" for d in facts.drivers[:MAX_DRIVERS]),
            transactions=tuple(self.transactions),
            status=facts.payment.status,
            no_answer=self.no_answer,
            cause_first=self.required is None and self._cause_first,
            intents=self.intents,
            required=self.required,
            said=self.said,
            limit=self.limit,
            passages=self.passages,
        )

    def ready(self) -> bool:
        """Whether the claims accepted so far may be said: nothing is said before the plan holds what
        it needs, so a plan that ends without it has shown nothing."""
        return self.missing() is None

    def full(self) -> bool:
        """Whether the plan holds all it may: its required claims and as many claims as a plan has."""
        return len(self.seen) == self.limit and self.ready()

    def to_say(self) -> list[Claim]:
        """The claims accepted so far in the order they are said: the required ones first (they begin
        every plan), or without a policy the lead; then the rest as planned; nothing twice, nothing
        the conversation said already."""
        if self.required is None:
            return ordered(self.seen, self.intent)
        fresh = [c for c in self.seen if not any(same_claim(c, s) for s in self.said if s not in self.required)]
        return ordered(fresh, self.intent, lead_first=False)


def ordered(claims: Sequence[Claim], intent: Intent, *, lead_first: bool = True) -> list[Claim]:
    """The claims to say, in order: the lead first (the question decides what comes first), then the
    rest as planned; repeats and claims an earlier one already said are left out."""
    lead = [c for c in claims if kind_of(c) in LEAD[intent]][:1] if lead_first else []
    said: list[Claim] = []
    for claim in [*lead, *(c for c in claims if c not in lead)]:
        covered = COVERED_BY.get(kind_of(claim), frozenset()) & {kind_of(c) for c in said}
        if not covered and not any(same_claim(claim, c) for c in said):
            said.append(claim)
    return said


def same_claim(a: Claim, b: Claim) -> bool:
    """The same statement, whatever its wording."""
    return msgspec.structs.replace(a, wording=1) == msgspec.structs.replace(b, wording=1)
