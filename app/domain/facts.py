"""Bill facts: balances, the difference, the drivers that explain it, and the payment status.

For a statement S with previous statement P:
    new_balance(S) = opening(S) + purchases + fees + interest + adjustments - refunds - payments
    opening(S)     = new_balance(P); the first statement opens at the account's opening_balance
    difference     = new_balance(S) - new_balance(P)
Before the first statement the "previous balance" is the account's opening balance.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import date
from decimal import Decimal
from typing import Literal

import msgspec

from app.domain.money import ZERO, cents, signed
from app.domain.records import AccountHistory, Line, Period

DriverKind = Literal["carried_balance", "purchases", "fees", "interest", "refunds", "adjustments"]
PaymentStatus = Literal["paid", "partially_paid", "unpaid", "overdue"]


class Driver(msgspec.Struct, frozen=True):
    kind: DriverKind
    label: str | None  # the merchant (purchases) or the fee's description (fees); None otherwise
    amount: Decimal  # how much this moved the balance, current minus previous


class Payment(msgspec.Struct, frozen=True, kw_only=True):
    status: PaymentStatus
    paid_amount: Decimal
    outstanding: Decimal


class Entry(msgspec.Struct, frozen=True, kw_only=True):
    """One transaction as a customer sees it on the statement."""

    posted_on: date
    kind: str
    amount: Decimal
    label: str


class StatementFacts(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    period_start: date
    period_end: date
    due_date: date
    minimum_due: Decimal
    opening_balance: Decimal
    new_balance: Decimal


class BillFacts(msgspec.Struct, frozen=True, kw_only=True):
    account_ref: str
    currency: str
    as_of: date
    statement: StatementFacts
    previous: StatementFacts | None
    previous_balance: Decimal
    difference: Decimal
    drivers: list[Driver]
    payment: Payment
    entries: list[Entry]  # the statement's transactions, largest first
    payments_received: list[Entry]  # payments after the statement closed, up to as_of, oldest first


def period_lines(lines: Iterable[Line], start: date, end: date) -> list[Line]:
    return [line for line in lines if start <= line.posted_on <= end]


def balance_change(lines: Iterable[Line]) -> Decimal:
    return sum((signed(line.kind, line.amount) for line in lines), ZERO)


def _label(primary: str | None, secondary: str | None) -> str:
    return (primary or secondary or "").strip()


def _components(opening: Decimal, lines: Sequence[Line]) -> dict[tuple[DriverKind, str | None], Decimal]:
    """Split a statement's new balance into the parts the drivers compare."""
    parts: dict[tuple[DriverKind, str | None], Decimal] = defaultdict(lambda: ZERO)
    parts[("carried_balance", None)] += opening
    for line in lines:
        if line.kind == "payment":
            parts[("carried_balance", None)] -= line.amount
        elif line.kind == "purchase":
            parts[("purchases", _label(line.merchant, line.description))] += line.amount
        elif line.kind == "fee":
            parts[("fees", _label(line.description, line.merchant))] += line.amount
        elif line.kind == "interest":
            parts[("interest", None)] += line.amount
        elif line.kind == "refund":
            parts[("refunds", None)] -= line.amount
        elif line.kind == "adjustment":
            parts[("adjustments", None)] += line.amount
        else:
            raise ValueError(f"unknown transaction kind {line.kind!r}")
    return parts


def drivers(
    previous_opening: Decimal,
    previous_lines: Sequence[Line],
    current_opening: Decimal,
    current_lines: Sequence[Line],
) -> list[Driver]:
    """Decompose new_balance(current) - new_balance(previous) into drivers that sum to it exactly.

    Both sides split into the same components (carried balance = opening - payments, purchases per
    merchant, fees per description, interest, refunds, adjustments), so the component differences
    add up to the balance difference by construction."""
    before = _components(previous_opening, previous_lines)
    after = _components(current_opening, current_lines)
    result = [
        Driver(kind=kind, label=label, amount=cents(after.get(key, ZERO) - before.get(key, ZERO)))
        for key in before.keys() | after.keys()
        for kind, label in [key]
    ]
    result = [d for d in result if d.amount != ZERO]
    result.sort(key=lambda d: (-abs(d.amount), d.kind, d.label or ""))
    return result


def payment_status(
    new_balance: Decimal, minimum_due: Decimal, due_date: date, paid: Decimal, as_of: date
) -> PaymentStatus:
    """paid covers the balance; overdue means less than the minimum arrived by the due date;
    unpaid means nothing arrived yet (and it is not overdue); anything else is a partial payment."""
    if paid >= new_balance:
        return "paid"
    if as_of > due_date and paid < minimum_due:
        return "overdue"
    if paid == ZERO:
        return "unpaid"
    return "partially_paid"


def _statement(period: Period, opening: Decimal, lines: Sequence[Line]) -> StatementFacts:
    return StatementFacts(
        id=period.id,
        period_start=period.period_start,
        period_end=period.period_end,
        due_date=period.due_date,
        minimum_due=cents(period.minimum_due),
        opening_balance=cents(opening),
        new_balance=cents(opening + balance_change(lines)),
    )


def openings(opening_balance: Decimal, statements: Sequence[Period]) -> list[Decimal]:
    """Each statement opens at the previous statement's new balance."""
    result = []
    balance = opening_balance
    for period in statements:
        result.append(balance)
        balance += period.net
    return result


def compute_facts(history: AccountHistory, as_of: date) -> BillFacts:
    if not history.statements:
        raise ValueError("the account has no statement")
    opens = openings(history.opening_balance, history.statements)
    current_period = history.statements[-1]
    current_lines = period_lines(history.lines, current_period.period_start, current_period.period_end)
    current = _statement(current_period, opens[-1], current_lines)

    previous: StatementFacts | None = None
    previous_lines: list[Line] = []
    previous_opening = history.opening_balance
    if len(history.statements) > 1:
        previous_period = history.statements[-2]
        previous_opening = opens[-2]
        previous_lines = period_lines(history.lines, previous_period.period_start, previous_period.period_end)
        previous = _statement(previous_period, previous_opening, previous_lines)
    previous_balance = previous.new_balance if previous else cents(history.opening_balance)

    received = [
        _entry(line)
        for line in history.lines
        if line.kind == "payment" and current.period_end < line.posted_on <= as_of
    ]
    paid = cents(sum((e.amount for e in received), ZERO))
    status = payment_status(current.new_balance, current.minimum_due, current.due_date, paid, as_of)
    return BillFacts(
        account_ref=history.account_ref,
        currency=history.currency,
        as_of=as_of,
        statement=current,
        previous=previous,
        previous_balance=previous_balance,
        difference=current.new_balance - previous_balance,
        drivers=drivers(previous_opening, previous_lines, current.opening_balance, current_lines),
        payment=Payment(status=status, paid_amount=paid, outstanding=max(current.new_balance - paid, ZERO)),
        entries=sorted((_entry(line) for line in current_lines), key=lambda e: (-abs(e.amount), e.posted_on)),
        payments_received=received,
    )


def _entry(line: Line) -> Entry:
    label = _label(line.description, line.merchant) if line.kind == "fee" else _label(line.merchant, line.description)
    return Entry(posted_on=line.posted_on, kind=line.kind, amount=cents(line.amount), label=label)
