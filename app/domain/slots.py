"""The model writes no figures: it writes named slots ("Your new balance is {new_balance}.") that the
service fills from the facts, in the customer's locale. This module says which slots a statement's
facts offer and what each one is: its role, its value and, for an amount that moved, its sign.

A slot is bound to one fact by its name, so a served sentence cannot state "some figure of this
statement" in the place of another (app/domain/validation.py checks the words around each slot)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date
from decimal import Decimal
from typing import Literal

import msgspec

from app.domain.facts import NAMED_CHARGES, BillFacts, Entry
from app.domain.money import cents

SLOT = re.compile(r"\{([a-z][a-z0-9_]*)\}")
MAX_DRIVERS = 6  # the drivers the prompt lists (the largest first)
MAX_ITEMS = NAMED_CHARGES  # the statement's transactions the prompt lists (the largest first)

# What a slot stands for: the role words around it must agree (validation's role cues).
Role = Literal[
    "new_balance",
    "previous_balance",
    "difference",
    "change_percent",
    "minimum_due",
    "due_date",
    "period",
    "paid_amount",
    "outstanding",
    "status",
    "driver",
    "item",
    "payment",
]
Kind = Literal["money", "date", "percent", "status", "label"]


class Slot(msgspec.Struct, frozen=True, kw_only=True):
    # A struct, not a dataclass: about forty per statement, built for every answer (16x cheaper).
    name: str
    role: Role
    kind: Kind
    money: Decimal | None = None  # the amount, for money slots (as it moved the balance: signed)
    day: date | None = None  # the date, for date slots
    index: int = 0  # the driver's, item's or payment's position (1-based), else 0

    @property
    def sign(self) -> int:
        """How the slot's amount moved the bill: +1 up, -1 down, 0 unchanged (money slots only)."""
        if self.money is None:
            return 0
        return (self.money > 0) - (self.money < 0)


def slots(facts: BillFacts) -> dict[str, Slot]:
    """Every slot these facts offer, by name."""
    s, p = facts.statement, facts.payment
    found = [
        Slot(name="new_balance", role="new_balance", kind="money", money=s.new_balance),
        Slot(name="previous_balance", role="previous_balance", kind="money", money=facts.previous_balance),
        Slot(name="difference", role="difference", kind="money", money=facts.difference),
        Slot(name="minimum_due", role="minimum_due", kind="money", money=s.minimum_due),
        Slot(name="due_date", role="due_date", kind="date", day=s.due_date),
        Slot(name="period_start", role="period", kind="date", day=s.period_start),
        Slot(name="period_end", role="period", kind="date", day=s.period_end),
        Slot(name="paid_amount", role="paid_amount", kind="money", money=p.paid_amount),
        Slot(name="outstanding", role="outstanding", kind="money", money=p.outstanding),
        Slot(name="status", role="status", kind="status"),
    ]
    if facts.previous_balance != 0:
        found.append(Slot(name="change_percent", role="change_percent", kind="percent", money=facts.difference))
    for i, d in enumerate(facts.drivers[:MAX_DRIVERS], start=1):
        found.append(Slot(name=f"driver_{i}", role="driver", kind="label", money=d.amount, index=i))
        found.append(Slot(name=f"driver_{i}_amount", role="driver", kind="money", money=d.amount, index=i))
    for i, e in enumerate(items(facts), start=1):
        found.append(Slot(name=f"item_{i}", role="item", kind="label", index=i))
        found.append(Slot(name=f"item_{i}_amount", role="item", kind="money", money=e.amount, index=i))
        found.append(Slot(name=f"item_{i}_date", role="item", kind="date", day=e.posted_on, index=i))
    for i, e in enumerate(facts.payments_received, start=1):
        found.append(Slot(name=f"payment_{i}_amount", role="payment", kind="money", money=-e.amount, index=i))
        found.append(Slot(name=f"payment_{i}_date", role="payment", kind="date", day=e.posted_on, index=i))
    return {slot.name: slot for slot in found}


def items(facts: BillFacts) -> list[Entry]:
    """The statement's transactions a slot can name (payments have their own slots): the largest
    first, then every fee and interest line the largest left out (a fees question names them all)."""
    charges = [e for e in facts.entries if e.kind != "payment"]
    return charges[:MAX_ITEMS] + [e for e in charges[MAX_ITEMS:] if e.kind in ("fee", "interest")][:MAX_ITEMS]


def fill(template: str, values: Mapping[str, str]) -> str:
    """The text with each slot replaced by its value (every slot must have one)."""
    return SLOT.sub(lambda m: values[m.group(1)], template)


def change_percent(facts: BillFacts) -> Decimal:
    """The change against the previous balance, in per cent with one decimal (previous balance not 0)."""
    return cents(abs(facts.difference) * 100 / abs(facts.previous_balance)).quantize(Decimal("0.1"))


def labels(facts: BillFacts) -> set[str]:
    """Third-party names (merchants, fee descriptions) that only a slot may write."""
    names = {d.label for d in facts.drivers if d.label}
    names |= {t.label for t in facts.totals if t.label and t.kind in ("purchase", "fee", "refund")}
    return {name for name in names if len(name.strip()) >= 3}
