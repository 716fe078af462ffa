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
    zh_share: float  # share of customers who prefer Simplified Chinese
    scale: Decimal  # typical spend relative to a EUR card
    tone: str


TENANTS = (
    DemoTenant(
        slug="northbridge",
        name="Northbridge Bank",
        priority_class="interactive",
        currency="EUR",
        zh_share=0.15,
        scale=Decimal(1),
        tone="warm, clear and concise",
    ),
    DemoTenant(
        slug="jade-river",
        name="Jade River Bank",
        priority_class="standard",
        currency="CNY",
        zh_share=0.8,
        scale=Decimal(7),
        tone="polite, formal and precise",
    ),
)

_TEXT: dict[str, dict[str, Any]] = {
    "en": {
        "everyday": [
            ("FreshMart", "groceries"),
            ("Metro Transit", "transport"),
            ("Corner Cafe", "dining"),
            ("Shell", "fuel"),
            ("BookNook", "shopping"),
            ("Amazon", "shopping"),
        ],
        "recurring": [("Netflix", "entertainment", "12.99"), ("Vodafone", "utilities", "25.00")],
        "new": [
            ("City Gym", "sport", "12.00", "Monthly membership"),
            ("Spotify", "entertainment", "10.99", "Premium subscription"),
            ("Cloud Storage Plus", "software", "9.99", "Annual plan renewal"),
        ],
        "abroad": [("Hotel Lisboa", "travel"), ("Tokyo Ramen Bar", "dining"), ("NYC Taxi", "transport")],
        "fx_fee": "Foreign transaction fee",
        "late_fee": "Late payment fee",
        "first": ["Ann", "James", "Maria", "David", "Sofia", "Liam", "Emma", "Noah", "Olivia", "Lucas"],
        "last": [
            "Lee",
            "Murphy",
            "Schmidt",
            "Rossi",
            "Dubois",
            "Novak",
            "Silva",
            "Jansen",
            "Kowalski",
            "Byrne",
        ],
    },
    "zh-CN": {
        "everyday": [
            ("盒马鲜生", "groceries"),
            ("滴滴出行", "transport"),
            ("瑞幸咖啡", "dining"),
            ("中国石化", "fuel"),
            ("京东", "shopping"),
            ("美团外卖", "dining"),
        ],
        "recurring": [("爱奇艺会员", "entertainment", "12.99"), ("中国移动", "utilities", "25.00")],
        "new": [
            ("超级猩猩健身", "sport", "12.00", "月度会员"),
            ("QQ音乐", "entertainment", "10.99", "豪华绿钻"),
            ("百度网盘", "software", "9.99", "年度会员续费"),
        ],
        "abroad": [("东京拉面屋", "dining"), ("新加坡酒店", "travel"), ("香港的士", "transport")],
        "fx_fee": "境外交易手续费",
        "late_fee": "逾期还款违约金",
        "first": ["芳", "伟", "娜", "敏", "静", "磊", "洋", "艳", "勇", "军"],
        "last": ["王", "李", "张", "刘", "陈", "杨", "赵", "黄", "周", "吴"],
    },
}


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
    text = _TEXT[locale]
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
        for merchant, category, amount in text["recurring"]:
            add(_day(rng, start, end), "purchase", cents(Decimal(amount) * scale), merchant, category, None)
        for _ in range(rng.randint(3, 7)):
            merchant, category = rng.choice(text["everyday"])
            add(_day(rng, start, end), "purchase", _money(rng, 4, 90, scale), merchant, category, None)
        if last and story == "new_subscription":
            merchant, category, amount, description = rng.choice(text["new"])
            add(
                _day(rng, start, end),
                "purchase",
                cents(Decimal(amount) * scale),
                merchant,
                category,
                description,
            )
        if last and story == "fx_fees":
            for _ in range(rng.randint(1, 3)):
                merchant, category = rng.choice(text["abroad"])
                amount = _money(rng, 20, 200, scale)
                posted = _day(rng, start, end)
                add(posted, "purchase", amount, merchant, category, None)
                add(posted, "fee", cents(amount * Decimal("0.02")), None, "fees", text["fx_fee"])
        if last and story == "refund":
            merchant, category = rng.choice(text["everyday"])
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
                text["late_fee"],
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
                "Payment - thank you" if locale == "en" else "还款 - 谢谢",
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
        locale = "zh-CN" if rng.random() < tenant.zh_share else "en"
        text = _TEXT[locale]
        first, last = rng.choice(text["first"]), rng.choice(text["last"])
        name = f"{last}{first}" if locale == "zh-CN" else f"{first} {last}"
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
