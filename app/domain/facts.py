"""Bill facts: balances, the difference, the drivers that explain it, and the payment status.

For a statement S with previous statement P:
    new_balance(S) = opening(S) + purchases + fees + interest + adjustments - refunds - payments
    opening(S)     = new_balance(P); the first statement opens at the account's opening_balance
    difference     = new_balance(S) - new_balance(P)
Before the first statement the "previous balance" is the account's opening balance.

Everything is computed from a statement's totals by kind and label (`summarize`), never from all of
its lines: the database keeps the same totals per statement (migration 0011), so an answer's cost
does not grow with a statement's length.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import date
from decimal import Decimal
from typing import Literal

import msgspec

from app.domain.money import ZERO, cents, signed
from app.domain.records import AccountHistory, Line, Period, Total

DriverKind = Literal["carried_balance", "purchases", "fees", "interest", "refunds", "adjustments"]
PaymentStatus = Literal["paid", "partially_paid", "unpaid", "overdue"]

# The lines an answer may name (`nameable`): the largest charges, and the largest fees and interest.
# Migration 0011's refresh_statement_summaries keeps the same numbers.
NAMED_CHARGES, NAMED_FEES = 12, 24


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
    entries: list[
        Entry
    ]  # the statement's lines an answer may name (`nameable`, those the question names), largest first
    payments_received: list[Entry]  # payments after the statement closed, up to as_of, oldest first
    totals: list[Total] = []  # the statement's lines by kind and label

    @property
    def labels(self) -> set[str]:
        """Every label on the statement (merchants, fee descriptions), as a question may name them."""
        return {t.label for t in self.totals}


def facts_digest(facts: BillFacts) -> str:
    """What an answer built from these facts can state, as a key: the facts, with the as-of date
    reduced to what a text says of it (whether the due date has passed). The same facts on another
    day give the same digest; a payment, a new line or the due date passing give another."""
    fields = msgspec.structs.asdict(facts)
    fields["as_of"] = facts.as_of > facts.statement.due_date
    return hashlib.sha256(msgspec.json.encode(fields)).hexdigest()


def period_lines(lines: Iterable[Line], start: date, end: date) -> list[Line]:
    return [line for line in lines if start <= line.posted_on <= end]


def balance_change(totals: Iterable[Total]) -> Decimal:
    return sum((signed(t.kind, t.amount) for t in totals), ZERO)


def _label(primary: str | None, secondary: str | None) -> str:
    return (primary or secondary or "").strip()


def line_label(line: Line) -> str:
    """How the customer knows a line: a fee by its description, anything else by its merchant."""
    if line.kind == "fee":
        return _label(line.description, line.merchant)
    return _label(line.merchant, line.description)


def totals(lines: Iterable[Line]) -> list[Total]:
    """The lines summed by kind and label, ordered by kind and label."""
    sums: dict[tuple[str, str], tuple[Decimal, int]] = {}
    for line in lines:
        amount, count = sums.get((line.kind, line_label(line)), (ZERO, 0))
        sums[(line.kind, line_label(line))] = (amount + line.amount, count + 1)
    return [Total(kind=k, label=label, amount=a, lines=n) for (k, label), (a, n) in sorted(sums.items())]


def nameable(lines: Sequence[Line]) -> list[Line]:
    """The lines of a statement an answer may name, the largest first (ties: earlier day, then the
    order given): the NAMED_CHARGES largest charges and the NAMED_FEES largest fees and interest."""
    order = sorted(range(len(lines)), key=lambda i: (-abs(lines[i].amount), lines[i].posted_on, i))
    charges = [i for i in order if lines[i].kind != "payment"][:NAMED_CHARGES]
    fees = [i for i in order if lines[i].kind in ("fee", "interest")][:NAMED_FEES]
    keep = set(charges) | set(fees)
    return [lines[i] for i in order if i in keep]


def summarize(history: AccountHistory) -> AccountHistory:
    """A ledger history (every line) as the summary the database reads: the last two statements'
    totals, and of the lines only those an answer may name and the payments after the close."""
    if history.totals is not None or not history.statements:
        return history
    current = history.statements[-1]
    current_lines = period_lines(history.lines, current.period_start, current.period_end)
    previous_lines: list[Line] = []
    if len(history.statements) > 1:
        previous = history.statements[-2]
        previous_lines = period_lines(history.lines, previous.period_start, previous.period_end)
    after = [line for line in history.lines if line.kind == "payment" and line.posted_on > current.period_end]
    return msgspec.structs.replace(
        history,
        totals=totals(current_lines),
        previous_totals=totals(previous_lines),
        lines=nameable(current_lines) + after,
    )


def _components(opening: Decimal, totals: Iterable[Total]) -> dict[tuple[DriverKind, str | None], Decimal]:
    """Split a statement's new balance into the parts the drivers compare."""
    parts: dict[tuple[DriverKind, str | None], Decimal] = defaultdict(lambda: ZERO)
    parts[("carried_balance", None)] += opening
    for t in totals:
        if t.kind == "payment":
            parts[("carried_balance", None)] -= t.amount
        elif t.kind == "purchase":
            parts[("purchases", t.label)] += t.amount
        elif t.kind == "fee":
            parts[("fees", t.label)] += t.amount
        elif t.kind == "interest":
            parts[("interest", None)] += t.amount
        elif t.kind == "refund":
            parts[("refunds", None)] -= t.amount
        elif t.kind == "adjustment":
            parts[("adjustments", None)] += t.amount
        else:
            raise ValueError(f"unknown transaction kind {t.kind!r}")
    return parts


def drivers(
    previous_opening: Decimal,
    previous_totals: Iterable[Total],
    current_opening: Decimal,
    current_totals: Iterable[Total],
) -> list[Driver]:
    """Decompose new_balance(current) - new_balance(previous) into drivers that sum to it exactly.

    Both sides split into the same components (carried balance = opening - payments, purchases per
    merchant, fees per description, interest, refunds, adjustments), so the component differences
    add up to the balance difference by construction."""
    before = _components(previous_opening, previous_totals)
    after = _components(current_opening, current_totals)
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


def _statement(period: Period, opening: Decimal, totals: Iterable[Total]) -> StatementFacts:
    return StatementFacts(
        id=period.id,
        period_start=period.period_start,
        period_end=period.period_end,
        due_date=period.due_date,
        minimum_due=cents(period.minimum_due),
        opening_balance=cents(opening),
        new_balance=cents(opening + balance_change(totals)),
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
    history = summarize(history)
    current_totals, previous_totals = history.totals or [], history.previous_totals or []
    opens = openings(history.opening_balance, history.statements)
    current_period = history.statements[-1]
    current = _statement(current_period, opens[-1], current_totals)

    previous: StatementFacts | None = None
    previous_opening = history.opening_balance
    if len(history.statements) > 1:
        previous_opening = opens[-2]
        previous = _statement(history.statements[-2], previous_opening, previous_totals)
    previous_balance = previous.new_balance if previous else cents(history.opening_balance)

    received = [
        _entry(line)
        for line in history.lines
        if line.kind == "payment" and current.period_end < line.posted_on <= as_of
    ]
    named = period_lines(history.lines, current.period_start, current.period_end)
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
        drivers=drivers(previous_opening, previous_totals, current.opening_balance, current_totals),
        payment=Payment(status=status, paid_amount=paid, outstanding=max(current.new_balance - paid, ZERO)),
        entries=sorted((_entry(line) for line in named), key=lambda e: (-abs(e.amount), e.posted_on)),
        payments_received=received,
        totals=current_totals,
    )


def _entry(line: Line) -> Entry:
    return Entry(posted_on=line.posted_on, kind=line.kind, amount=cents(line.amount), label=line_label(line))
