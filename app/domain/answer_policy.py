"""What a complete answer must say: decided by the service from the question and the facts, never
left to the model (DESIGN.md, rule 9).

Two sources, both turned into concrete claims (app/domain/plan.py) before the engine is asked:
- the bank's answer policy: for each intent and state of the facts (unpaid, overdue, a bill moved by
  offsetting drivers, ...), the claims a complete answer holds; a tenant may override a state's
  claims (`TenantPolicy.answers`);
- the question's own needs (app/domain/lexicon.py NEEDS): "how much" needs the minimum, "by when"
  its due date, "did it arrive" what arrived since the statement closed.

Every intent of a multi-part question contributes, in the question's order. In a conversation a
follow-up ("and why?", "anything else?") adds: a claim already said is not required again unless the
question names it ("by when?") or asks for it again; "why?" after a bill change goes one level deeper.
A question of its own that names nothing more specific ("why was I charged interest?") is answered
whole, said before or not; one that does ("how much do I have to pay?") gets what it names. The
required claims are forced into every plan the engine can write (app/domain/plan_schema.py) and said
before the model's first token."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal

from app.domain.claims import (
    Change,
    Claim,
    DriverClaim,
    FeesInterest,
    MinimumDue,
    NewBalance,
    NextStep,
    NothingMore,
    PaidSinceClose,
    PassageClaim,
    PaymentStatusClaim,
    PeriodClaim,
    StillToPay,
    Transaction,
)
from app.domain.facts import BillFacts
from app.domain.plan import FITS, same_claim
from app.domain.slots import MAX_DRIVERS, items
from app.domain.understanding import Reading
from app.domain.vocabulary import Intent, Need

# A bill change is explained by the shortest run of drivers, largest first, whose sum comes within
# this share of the difference (offsetting drivers included), at most MAX_EXPLAINING of them.
EXPLAINED_SHARE = Decimal("0.10")
MAX_EXPLAINING = 4

# The states of the facts a policy distinguishes, per intent.
STATES: dict[Intent, tuple[str, ...]] = {
    "payment": ("paid", "credit", "partially_paid", "unpaid", "overdue"),
    "bill_change": ("changed", "same", "first"),
    "charge": ("any",),
    "fees_interest": ("any",),
}
# What each state's answer holds, in the order it is said. "drivers": the explaining run;
# "transaction": the lines the question names; "next_step": how to pay.
DEFAULT_RULES: dict[str, tuple[str, ...]] = {
    "payment:paid": ("payment_status", "paid_since_close"),
    "payment:credit": ("payment_status", "new_balance"),
    "payment:partially_paid": ("payment_status", "paid_since_close", "still_to_pay", "minimum_due"),
    "payment:unpaid": ("payment_status", "minimum_due"),
    "payment:overdue": ("payment_status", "minimum_due", "still_to_pay", "next_step"),
    "bill_change:changed": ("change", "drivers"),
    "bill_change:same": ("change",),
    "bill_change:first": ("change",),
    "charge:any": ("transaction",),
    "fees_interest:any": ("fees_interest",),
}
RULE_KINDS = frozenset(
    {"payment_status", "paid_since_close", "still_to_pay", "minimum_due", "new_balance", "period", "next_step"}
    | {"change", "drivers", "transaction", "fees_interest"}
)
# What each need asks for, under the intents it belongs to.
NEED_KINDS: dict[Need, dict[Intent, tuple[str, ...]]] = {
    "amount_due": {"payment": ("minimum_due", "still_to_pay")},
    "due_date": {"payment": ("minimum_due",)},
    "arrived": {"payment": ("paid_since_close",)},
    "cause": {"bill_change": ("drivers",)},
}

# What "anything else?" adds, in this order, once the policy's claims are said.
MORE: dict[Intent, tuple[str, ...]] = {
    "bill_change": ("drivers", "payment_status", "minimum_due", "fees_interest"),
    "payment": ("paid_since_close", "still_to_pay", "minimum_due", "new_balance", "period"),
    "fees_interest": ("payment_status", "minimum_due"),
    "charge": ("period", "new_balance"),
}


def state_of(intent: Intent, facts: BillFacts) -> str:
    if intent == "payment":
        return "credit" if facts.statement.new_balance <= 0 else facts.payment.status
    if intent == "bill_change":
        return "first" if facts.previous is None else "same" if facts.difference == 0 else "changed"
    return "any"


def check_rules(rules: Mapping[str, Sequence[str]]) -> None:
    """ValueError naming the first key or claim a policy override may not hold."""
    for key, kinds in rules.items():
        intent, _, state = key.partition(":")
        if state not in STATES.get(intent, ()):  # type: ignore[call-overload]
            raise ValueError(f"answer policy {key!r}: not an intent:state ({', '.join(DEFAULT_RULES)})")
        if not kinds:
            raise ValueError(f"answer policy {key!r}: a complete answer holds at least one claim")
        for kind in kinds:
            if kind not in RULE_KINDS:
                raise ValueError(f"answer policy {key!r}: unknown claim {kind!r} ({', '.join(sorted(RULE_KINDS))})")
            if {"drivers": "driver"}.get(kind, kind) not in FITS[intent]:  # type: ignore[index]  # checked above
                raise ValueError(f"answer policy {key!r}: {kind!r} does not answer a {intent} question")


def explaining_drivers(facts: BillFacts) -> list[int]:
    """The drivers (1-based) that explain the difference: the shortest run, largest first, whose sum
    comes within EXPLAINED_SHARE of it, at most MAX_EXPLAINING."""
    drivers = facts.drivers[: min(MAX_DRIVERS, MAX_EXPLAINING)]
    if facts.difference == 0 or not drivers:
        return []
    total = Decimal(0)
    for n, driver in enumerate(drivers, start=1):
        total += driver.amount
        if abs(facts.difference - total) <= EXPLAINED_SHARE * abs(facts.difference):
            return list(range(1, n + 1))
    return list(range(1, len(drivers) + 1))


def _claims(kind: str, facts: BillFacts, focus: Sequence[int], said: Sequence[Claim]) -> list[Claim]:
    """A rule's kind as the claims these facts make true (none: it does not apply to them)."""
    paid = facts.payment.status == "paid"
    if kind == "drivers":
        run = explaining_drivers(facts)
        fresh = [n for n in run if not any(same_claim(_driver(facts, n), c) for c in said)]
        if fresh or not run:
            return [_driver(facts, n) for n in fresh]
        # "Why?" once the run is said: one level deeper, the largest lines behind its drivers (with
        # their dates and amounts), then the drivers after it.
        labels = {facts.drivers[n - 1].label for n in run} - {None}
        lines: list[Claim] = [Transaction(n=n) for n, e in enumerate(items(facts), start=1) if e.label in labels]
        after: list[Claim] = [_driver(facts, n) for n in range(len(run) + 1, min(len(facts.drivers), MAX_DRIVERS) + 1)]
        lines, after = ([c for c in cs if not any(same_claim(c, s) for s in said)] for cs in (lines, after))
        return (lines or after)[:2]
    if kind in ("still_to_pay", "minimum_due", "next_step") and paid:
        return []  # nothing is left to pay: the status says so
    simple: dict[str, Claim] = {
        "payment_status": PaymentStatusClaim(status=facts.payment.status),
        "paid_since_close": PaidSinceClose(),
        "still_to_pay": StillToPay(),
        "minimum_due": MinimumDue(),
        "new_balance": NewBalance(),
        "period": PeriodClaim(),
        "next_step": NextStep(action="pay"),
        "fees_interest": FeesInterest(),
    }
    if kind == "change":
        return [Change(direction="up" if facts.difference > 0 else "down" if facts.difference < 0 else "same")]
    if kind == "transaction":
        return [Transaction(n=n) for n in sorted(focus)[:2]]
    if kind == "passage":
        return [PassageClaim(n=1)]
    return [simple[kind]]


def _driver(facts: BillFacts, n: int) -> DriverClaim:
    return DriverClaim(n=n, direction="up" if facts.drivers[n - 1].amount > 0 else "down")


def required_claims(
    facts: BillFacts,
    reading: Reading,
    *,
    focus: Iterable[int] = (),
    said: Sequence[Claim] = (),
    rules: Mapping[str, Sequence[str]] | None = None,
    passages: int = 0,
) -> tuple[Claim, ...]:
    """The claims this answer must hold, in the order they are said: each intent's policy for the
    facts' state, then what the question needs; without what the conversation already said (unless
    it asks for it again). `focus`: the numbers of the transactions the question names (FACTS order);
    `rules`: the tenant's overrides of DEFAULT_RULES; `passages`: the bank's passages that fit a policy
    question (app/domain/knowledge.py): the one that fits is its answer; of several, the model picks."""
    focus = list(focus)
    kinds: list[tuple[str, bool]] = []  # each kind, and whether the question asks for it by name
    for intent in reading.all_intents:
        if intent == "policy":
            kinds += [("passage", True)] if passages == 1 else []
            continue
        if intent == "out_of_scope":
            continue
        key = f"{intent}:{state_of(intent, facts)}"
        named = [(k, need != "cause") for need in reading.needs for k in NEED_KINDS.get(need, {}).get(intent, ())]
        # A question of its own that names nothing more specific ("why was I charged interest?") asks
        # for its intent's whole answer, said before or not; otherwise what was said is not repeated.
        whole = not reading.followup and not named
        kinds += [(k, whole) for k in (rules or {}).get(key, DEFAULT_RULES[key])] + named
    repeat = "again" in reading.needs
    required: list[Claim] = []
    for kind, asked in dict.fromkeys(kinds):
        # What the question asks is said even if said before ("by when?"); the rest only once.
        earlier = () if repeat or asked else said
        for claim in _claims(kind, facts, focus, earlier):
            if not any(same_claim(claim, c) for c in (*required, *earlier)):
                required.append(claim)
    if said and (not required or "more" in reading.needs):
        # A follow-up adds: the next thing not yet said, or, with nothing left, that there is nothing
        # more and the way to a person.
        further = [k for intent in reading.all_intents for k in MORE.get(intent, ())]
        fresh = (c for k in dict.fromkeys(further) for c in _claims(k, facts, focus, said))
        more = next((c for c in fresh if not any(same_claim(c, s) for s in (*required, *said))), None)
        required += [more] if more else [NothingMore(), NextStep(action="agent")]
    return tuple(required)
