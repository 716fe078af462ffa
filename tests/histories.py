"""Account histories for domain tests: statement spans, the periods over them and the 12.00 gym story
as ledger lines (the domain's view of what tests/factories.py writes as an import document)."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

from app.domain.money import ZERO, signed
from app.domain.records import AccountHistory, Line, Period

D = Decimal
SEP = (date(2026, 9, 1), date(2026, 9, 30))
OCT = (date(2026, 10, 1), date(2026, 10, 31))

# September: 112.99. October: new balance 124.99, +12.00 (City Gym), minimum 25.00 due 25 November 2026.
GYM = [
    Line(posted_on=date(2026, 9, 3), kind="purchase", amount=D("100.00"), merchant="FreshMart"),
    Line(posted_on=date(2026, 9, 10), kind="purchase", amount=D("12.99"), merchant="Netflix"),
    Line(posted_on=date(2026, 10, 3), kind="purchase", amount=D("100.00"), merchant="FreshMart"),
    Line(posted_on=date(2026, 10, 10), kind="purchase", amount=D("12.99"), merchant="Netflix"),
    Line(posted_on=date(2026, 10, 12), kind="purchase", amount=D("12.00"), merchant="City Gym"),
    Line(posted_on=date(2026, 10, 15), kind="payment", amount=D("112.99")),
]


def period(id_: int, span: tuple[date, date], lines: list[Line], minimum: str = "25.00") -> Period:
    net = sum((signed(x.kind, x.amount) for x in lines if span[0] <= x.posted_on <= span[1]), ZERO)
    return Period(
        id=id_,
        period_start=span[0],
        period_end=span[1],
        due_date=span[1] + timedelta(days=25),
        minimum_due=D(minimum),
        net=net,
    )


def history(
    lines: list[Line], spans: list[tuple[date, date]], currency: str = "EUR", opening: str = "0.00"
) -> AccountHistory:
    return AccountHistory(
        account_id=1,
        account_ref="A-1",
        currency=currency,
        opening_balance=D(opening),
        customer_ref="C-1",
        customer_locale="en",
        statements=[period(i + 1, s, lines) for i, s in enumerate(spans)],
        lines=lines,
    )
