"""Generated account histories for property tests of plans (app/domain/plan.py) and their wordings
(app/answers/realize.py): one or two statements of purchases at a handful of merchants, fees,
interest, refunds and payments before and after the statement closes, with as_of before or after
the due date, so that every payment status occurs. Driven by a `random.Random`, so the same seed
gives the same facts (a seeded suite counts exactly) and hypothesis can drive it (`st.randoms`)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from datetime import date, timedelta
from decimal import Decimal

from app.domain.claims import CLAIM_TYPES, Claim, decode_claim
from app.domain.facts import BillFacts, compute_facts
from app.domain.money import ZERO, cents, signed
from app.domain.plan import PlanCheck
from app.domain.records import AccountHistory, Line, Period
from app.domain.slots import MAX_DRIVERS, items
from app.domain.vocabulary import Intent
from tests.histories import OCT, SEP

MERCHANTS = ("FreshMart", "Netflix", "City Gym", "BookNook", "Metro Rail", "Cafe Lumen")
FEES = ("Foreign transaction fee", "Annual card fee", "Cash advance fee")
KNOWN = (*MERCHANTS, *FEES)  # every third-party name a generated statement can hold
CURRENCIES = ("EUR", "CNY", "USD")
PLAN_INTENTS: tuple[Intent, ...] = ("bill_change", "charge", "fees_interest", "payment")
DUE_DAYS = 25  # the due date is this many days after the period ends


def _amount(rng: random.Random, low: int, high: int) -> Decimal:
    """A random amount from low to high whole units, in cents."""
    return cents(Decimal(rng.randint(low * 100, high * 100)) / 100)


def _day(rng: random.Random, span: tuple[date, date]) -> date:
    return span[0] + timedelta(days=rng.randint(0, (span[1] - span[0]).days))


def _period_lines(rng: random.Random, span: tuple[date, date], merchants: list[str]) -> list[Line]:
    lines = [
        Line(posted_on=_day(rng, span), kind="purchase", amount=_amount(rng, 1, 400), merchant=rng.choice(merchants))
        for _ in range(rng.randint(0, 6))
    ]
    for _ in range(rng.choice((0, 0, 1, 2))):
        lines.append(
            Line(posted_on=_day(rng, span), kind="fee", amount=_amount(rng, 1, 40), description=rng.choice(FEES))
        )
    if rng.random() < 0.3:
        lines.append(Line(posted_on=span[1], kind="interest", amount=_amount(rng, 0, 30) + Decimal("0.01")))
    if rng.random() < 0.3:
        lines.append(
            Line(posted_on=_day(rng, span), kind="refund", amount=_amount(rng, 1, 80), merchant=rng.choice(merchants))
        )
    if rng.random() < 0.5:
        lines.append(Line(posted_on=_day(rng, span), kind="payment", amount=_amount(rng, 10, 500)))
    return lines


def random_history(rng: random.Random) -> tuple[AccountHistory, date]:
    """An account history and the day it is asked about (as_of)."""
    merchants = rng.sample(MERCHANTS, rng.randint(1, 4))
    spans = [SEP, OCT] if rng.random() < 0.8 else [OCT]
    opening = _amount(rng, 0, 300) if rng.random() < 0.3 else ZERO
    lines = [line for span in spans for line in _period_lines(rng, span, merchants)]
    net = sum((signed(x.kind, x.amount) for x in lines if x.posted_on >= OCT[0]), ZERO)
    if net > 0 and rng.random() < 0.1:  # a payment in the period as large as its charges: the bill is the same
        lines.append(Line(posted_on=OCT[1], kind="payment", amount=net))
    statements: list[Period] = []
    balance = opening
    for i, span in enumerate(spans, start=1):
        net = sum((signed(x.kind, x.amount) for x in lines if span[0] <= x.posted_on <= span[1]), ZERO)
        balance += net
        minimum = min(max(cents(balance * Decimal("0.05")), Decimal("25.00")), max(balance, ZERO))
        statements.append(
            Period(
                id=i,
                period_start=span[0],
                period_end=span[1],
                due_date=span[1] + timedelta(days=DUE_DAYS),
                minimum_due=cents(minimum),
                net=net,
            )
        )
    due = OCT[1] + timedelta(days=DUE_DAYS)
    as_of = due + timedelta(days=rng.randint(-24, 20))  # from the day after closing to after the due date
    # After the statement closed: nothing, part of the bill (under or over the minimum), all of it, or more.
    paid_by_then = [
        Line(posted_on=OCT[1] + timedelta(days=rng.randint(1, (as_of - OCT[1]).days)), kind="payment", amount=a)
        for a in _payments(rng, balance)
    ]
    history = AccountHistory(
        account_id=1,
        account_ref="A-1",
        currency=rng.choice(CURRENCIES),
        opening_balance=opening,
        customer_ref="C-1",
        customer_locale="en",
        statements=statements,
        lines=sorted([*lines, *paid_by_then], key=lambda x: x.posted_on),
    )
    return history, as_of


def _payments(rng: random.Random, balance: Decimal) -> list[Decimal]:
    mode = rng.choice(("none", "part", "full", "more"))
    if mode == "none" or balance <= Decimal("0.02"):
        return []
    if mode == "part":
        total = cents(balance * Decimal(rng.randint(1, 95)) / 100) or Decimal("0.01")
    else:
        total = balance if mode == "full" else balance + _amount(rng, 1, 50)
    if rng.random() < 0.4 and total >= Decimal("0.02"):  # in two payments
        first = cents(total * Decimal(rng.randint(10, 90)) / 100) or Decimal("0.01")
        return [first, total - first]
    return [total]


def random_facts(rng: random.Random) -> BillFacts:
    history, as_of = random_history(rng)
    return compute_facts(history, as_of)


def candidate_claims(facts: BillFacts) -> Iterator[Claim]:
    """Every claim a plan could hold for these facts, valid or not: every argument value, every
    driver and transaction number and one past the last, both wordings."""
    drivers, transactions = min(len(facts.drivers), MAX_DRIVERS), len(items(facts))
    raw: list[dict[str, object]] = [{"claim": "change", "direction": d} for d in ("up", "down", "same")]
    raw += [{"claim": "driver", "n": n, "direction": d} for n in range(1, drivers + 2) for d in ("up", "down")]
    raw += [{"claim": "transaction", "n": n} for n in range(1, transactions + 2)]
    raw += [{"claim": "payment_status", "status": s} for s in ("paid", "partially_paid", "unpaid", "overdue")]
    raw += [{"claim": "next_step", "action": a} for a in ("pay", "agent")]
    raw += [{"claim": "passage", "n": n} for n in (1, 2)]  # no passage is offered: both unknown
    raw += [
        {"claim": kind}
        for kind in CLAIM_TYPES
        if kind not in {"change", "driver", "transaction", "payment_status", "next_step", "passage"}
    ]
    for fields in raw:
        for wording in (1, 2):
            yield decode_claim(claim_json({**fields, "wording": wording}))


def claim_json(fields: dict[str, object]) -> str:
    """A claim's JSON text as the model writes it under the grammar (bench/fakes/plans.py's form)."""
    return json.dumps(fields, ensure_ascii=False)


def accepted_alone(facts: BillFacts, intent: Intent, focus: tuple[str, ...] = ()) -> list[Claim]:
    """The candidate claims a fresh PlanCheck accepts for this intent, each on its own."""
    return [c for c in candidate_claims(facts) if PlanCheck(facts, intent, focus).check(c) is None]
