"""Deterministic demo data: two banks, a few hundred customers, the bills customers ask about.

Every account gets four monthly statements with everyday spending, and one of the stories behind
real questions: a new subscription, foreign-currency fees, interest after a partial payment, a
refund, a late fee and an overdue bill, or a bill paid in full. Same seed, same data.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec

from app import locales
from app.domain.money import ZERO, cents
from app.domain.vocabulary import PriorityClass

LAST_PERIOD_END = date(2026, 10, 31)
# Each demo bank's help-centre library, written for the demo (app/domain/knowledge.py has the form).
LIBRARIES = Path(__file__).parent / "knowledge" / "demo"
MONTHS = 4
STORIES = ("new_subscription", "fx_fees", "interest_after_partial", "refund", "overdue", "paid_in_full")


@dataclass(frozen=True, kw_only=True)
class DemoTenant:
    slug: str
    name: str
    priority_class: PriorityClass
    currency: str
    scale: Decimal  # typical spend relative to a EUR card
    tone: str


TENANTS = (
    DemoTenant(
        slug="northbridge",
        name="Northbridge Bank",
        priority_class="interactive",
        currency="EUR",
        scale=Decimal(1),
        tone="warm, clear and concise",
    ),
    DemoTenant(
        slug="jade-river",
        name="Jade River Bank",
        priority_class="standard",
        currency="CNY",
        scale=Decimal(7),
        tone="polite, formal and precise",
    ),
)


class DemoWords(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A locale's demo data (prompts/locales/<locale>/demo.json): what its customers' bills say."""

    share: dict[str, float]  # by demo bank: the share of its customers who prefer this locale
    name: str  # how a customer's name is written: "{first} {last}"
    payment: str  # a payment's description
    everyday: tuple[tuple[str, str], ...]  # (merchant, category)
    recurring: tuple[tuple[str, str, Decimal], ...]  # (merchant, category, amount in EUR)
    new: tuple[tuple[str, str, Decimal, str], ...]  # (merchant, category, amount, description)
    abroad: tuple[tuple[str, str], ...]
    fx_fee: str
    late_fee: str
    first: tuple[str, ...]
    last: tuple[str, ...]


def _words(locale: str) -> DemoWords:
    return locales.read(locale, "demo.json", DemoWords)


def _locale(rng: random.Random, tenant: DemoTenant) -> str:
    """A customer's locale: each other locale by its share of the bank's customers, else the default."""
    draw, share = rng.random(), 0.0
    for locale in locales.locales():
        if locale != locales.default():
            share += _words(locale).share.get(tenant.slug, 0.0)
            if draw < share:
                return locale
    return locales.default()


def _periods(last_end: date, months: int) -> list[tuple[date, date]]:
    periods: list[tuple[date, date]] = []
    end = last_end
    for _ in range(months):
        start = end.replace(day=1)
        periods.append((start, end))
        end = start - timedelta(days=1)
    return periods[::-1]


def _money(rng: random.Random, low: float, high: float, scale: Decimal) -> Decimal:
    # Whole cents drawn as integers: the data never passes through a float amount.
    return cents(Decimal(rng.randint(int(low * 100), int(high * 100))) / 100 * scale)


def _day(rng: random.Random, start: date, end: date) -> date:
    return start + timedelta(days=rng.randint(0, (end - start).days))


def _account(
    rng: random.Random, tenant: DemoTenant, locale: str, ref: str, story: str, last_end: date
) -> dict[str, Any]:
    text = _words(locale)
    scale = tenant.scale
    transactions: list[dict[str, Any]] = []
    statements: list[dict[str, Any]] = []

    def add(
        posted: date,
        kind: str,
        amount: Decimal,
        merchant: str | None,
        category: str | None,
        description: str | None,
    ) -> None:
        transactions.append(
            {
                "ref": f"{ref}-T{len(transactions) + 1:04d}",
                "posted_on": posted.isoformat(),
                "kind": kind,
                "amount": str(amount),
                "merchant": merchant,
                "category": category,
                "description": description,
            }
        )

    periods = _periods(last_end, MONTHS)
    balance = ZERO
    unpaid_before = ZERO  # what the previous statement left unpaid, which attracts interest
    missed_due = False
    for index, (start, end) in enumerate(periods):
        last = index == len(periods) - 1
        before = len(transactions)
        for merchant, category, amount in text.recurring:
            add(_day(rng, start, end), "purchase", cents(amount * scale), merchant, category, None)
        for _ in range(rng.randint(3, 7)):
            merchant, category = rng.choice(text.everyday)
            add(_day(rng, start, end), "purchase", _money(rng, 4, 90, scale), merchant, category, None)
        if last and story == "new_subscription":
            merchant, category, amount, description = rng.choice(text.new)
            add(
                _day(rng, start, end),
                "purchase",
                cents(amount * scale),
                merchant,
                category,
                description,
            )
        if last and story == "fx_fees":
            for _ in range(rng.randint(1, 3)):
                merchant, category = rng.choice(text.abroad)
                amount = _money(rng, 20, 200, scale)
                posted = _day(rng, start, end)
                add(posted, "purchase", amount, merchant, category, None)
                add(posted, "fee", cents(amount * Decimal("0.02")), None, "fees", text.fx_fee)
        if last and story == "refund":
            merchant, category = rng.choice(text.everyday)
            add(_day(rng, start, end), "refund", _money(rng, 10, 60, scale), merchant, category, None)
        if unpaid_before > 0:
            add(end, "interest", cents(unpaid_before * Decimal("0.018")), None, "interest", None)
        if missed_due:
            add(
                start + timedelta(days=rng.randint(0, 3)),
                "fee",
                cents(Decimal(25) * scale),
                None,
                "fees",
                text.late_fee,
            )
        # Payments for the previous statement, posted in this period, were added last iteration.
        activity = sum(
            (Decimal(t["amount"]) * (-1 if t["kind"] in ("refund", "payment") else 1) for t in transactions[before:]),
            ZERO,
        )
        balance += activity
        minimum = min(max(cents(Decimal(25) * scale), cents(balance * Decimal("0.03"))), max(balance, ZERO))
        due = end + timedelta(days=25)
        statements.append(
            {
                "period_start": start.isoformat(),
                "period_end": end.isoformat(),
                "due_date": due.isoformat(),
                "minimum_due": str(minimum),
            }
        )

        # How the customer pays this statement, early in the next period.
        if story == "overdue" and index >= len(periods) - 2:
            paid = ZERO
        elif story == "interest_after_partial" and index == len(periods) - 2:
            paid = minimum
        elif story == "paid_in_full" or rng.random() < 0.6:
            paid = balance
        else:
            paid = max(minimum, cents(balance * Decimal(rng.choice(("0.3", "0.5", "0.8")))))
        if paid > 0:
            add(
                end + timedelta(days=rng.randint(5, 20)),
                "payment",
                paid,
                None,
                "payment",
                text.payment,
            )
        missed_due = paid < minimum
        unpaid_before = max(balance - paid, ZERO)
        balance -= paid
    return {
        "ref": ref,
        "kind": "credit_card",
        "currency": tenant.currency,
        "masked_number": f"**** {rng.randint(1000, 9999)}",
        "opening_balance": "0.00",
        "statements": statements,
        "transactions": transactions,
    }


def generate(
    tenant: DemoTenant, customers: int = 150, seed: int = 7, last_end: date = LAST_PERIOD_END
) -> dict[str, Any]:
    """One import document for the tenant (see app/data/importer.py for the format)."""
    rng = random.Random(f"{seed}:{tenant.slug}")
    people = []
    account_no = 1000
    for n in range(customers):
        locale = _locale(rng, tenant)
        text = _words(locale)
        first, last = rng.choice(text.first), rng.choice(text.last)
        name = text.name.format(first=first, last=last)
        accounts = []
        for _ in range(1 if rng.random() < 0.75 else 2):
            account_no += 1
            story = STORIES[(n + account_no) % len(STORIES)]
            accounts.append(_account(rng, tenant, locale, f"A-{account_no}", story, last_end))
        people.append({"ref": f"C-{1001 + n}", "name": name, "locale": locale, "accounts": accounts})
    return {"tenant": tenant.slug, "customers": people}


def library(tenant: DemoTenant) -> bytes:
    """The demo bank's help-centre library file."""
    return (LIBRARIES / f"{tenant.slug}.json").read_bytes()
