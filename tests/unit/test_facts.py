"""Bill facts: hand-computed scenarios in both currencies, and the invariants, property-based."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.facts import compute_facts, drivers, totals
from app.domain.money import ZERO, signed
from app.domain.records import Line
from tests.histories import OCT, SEP, history

D = Decimal


def test_hand_computed_eur_bill_change() -> None:
    lines = [
        Line(posted_on=date(2026, 9, 3), kind="purchase", amount=D("100.00"), merchant="FreshMart"),
        Line(posted_on=date(2026, 9, 10), kind="purchase", amount=D("12.99"), merchant="Netflix"),
        Line(posted_on=date(2026, 10, 3), kind="purchase", amount=D("80.00"), merchant="FreshMart"),
        Line(posted_on=date(2026, 10, 10), kind="purchase", amount=D("12.99"), merchant="Netflix"),
        Line(posted_on=date(2026, 10, 12), kind="purchase", amount=D("12.00"), merchant="City Gym"),
        Line(posted_on=date(2026, 10, 14), kind="payment", amount=D("100.00")),
        Line(
            posted_on=date(2026, 10, 20),
            kind="fee",
            amount=D("2.40"),
            merchant=None,
            description="Foreign transaction fee",
        ),
        Line(posted_on=date(2026, 10, 31), kind="interest", amount=D("0.23")),
        Line(posted_on=date(2026, 10, 21), kind="refund", amount=D("7.50"), merchant="FreshMart"),
        Line(posted_on=date(2026, 10, 22), kind="adjustment", amount=D("-1.00"), merchant=None, description="Goodwill"),
    ]
    facts = compute_facts(history(lines, [SEP, OCT]), as_of=date(2026, 11, 1))
    # Sept: 112.99. Oct: 112.99 - 100 + 80 + 12.99 + 12 + 2.40 + 0.23 - 7.50 - 1.00 = 112.11
    assert facts.previous_balance == D("112.99")
    assert facts.statement.opening_balance == D("112.99")
    assert facts.statement.new_balance == D("112.11")
    assert facts.difference == D("-0.88")
    assert [(d.kind, d.label, d.amount) for d in facts.drivers] == [
        ("purchases", "FreshMart", D("-20.00")),
        ("carried_balance", None, D("12.99")),  # 112.99 - 100.00 vs 0.00 - 0.00
        ("purchases", "City Gym", D("12.00")),
        ("refunds", None, D("-7.50")),
        ("fees", "Foreign transaction fee", D("2.40")),
        ("adjustments", None, D("-1.00")),
        ("interest", None, D("0.23")),
    ]  # Netflix is unchanged, so it is not a driver
    assert sum(d.amount for d in facts.drivers) == facts.difference


def test_hand_computed_cny_bill_change() -> None:
    lines = [
        Line(posted_on=date(2026, 9, 5), kind="purchase", amount=D("3280.00"), merchant="京东"),
        Line(posted_on=date(2026, 10, 8), kind="payment", amount=D("1000.00")),
        Line(posted_on=date(2026, 10, 9), kind="purchase", amount=D("45.50"), merchant="瑞幸咖啡"),
        Line(posted_on=date(2026, 10, 31), kind="interest", amount=D("40.64")),
    ]
    facts = compute_facts(history(lines, [SEP, OCT], currency="CNY"), as_of=date(2026, 11, 1))
    assert facts.currency == "CNY"
    assert facts.previous_balance == D("3280.00")
    assert facts.statement.new_balance == D("2366.14")  # 3280 - 1000 + 45.50 + 40.64
    assert facts.difference == D("-913.86")
    assert [(d.kind, d.label, d.amount) for d in facts.drivers] == [
        ("purchases", "京东", D("-3280.00")),
        ("carried_balance", None, D("2280.00")),
        ("purchases", "瑞幸咖啡", D("45.50")),
        ("interest", None, D("40.64")),
    ]


def test_first_statement_opens_at_the_account_opening_balance() -> None:
    lines = [
        Line(posted_on=date(2026, 9, 5), kind="purchase", amount=D("20.00"), merchant="Shop"),
        Line(posted_on=date(2026, 9, 6), kind="payment", amount=D("5.00")),
    ]
    facts = compute_facts(history(lines, [SEP], opening="-3.00"), as_of=date(2026, 10, 1))
    assert facts.previous is None
    assert facts.previous_balance == D("-3.00")
    assert facts.statement.new_balance == D("12.00")
    assert facts.difference == D("15.00")
    assert [(d.kind, d.amount) for d in facts.drivers] == [("purchases", D("20.00")), ("carried_balance", D("-5.00"))]


def test_lines_outside_the_periods_do_not_count() -> None:
    lines = [
        Line(
            posted_on=date(2026, 8, 31), kind="purchase", amount=D("999.00"), merchant="Before"
        ),  # no statement covers August
        Line(posted_on=date(2026, 10, 5), kind="purchase", amount=D("10.00"), merchant="Shop"),
        Line(
            posted_on=date(2026, 11, 2), kind="purchase", amount=D("500.00"), merchant="After"
        ),  # next statement, not this one
    ]
    facts = compute_facts(history(lines, [SEP, OCT]), as_of=date(2026, 11, 3))
    assert facts.statement.new_balance == D("10.00")
    assert facts.difference == D("10.00")


# --- property-based: the drivers always add up to the difference, to the cent ---------------------

amounts = st.decimals(min_value=D("0.01"), max_value=D("99999.99"), places=2)
signed_amounts = st.decimals(min_value=D("-9999.99"), max_value=D("9999.99"), places=2).filter(lambda x: x != 0)
merchants = st.sampled_from(["FreshMart", "City Gym", "Netflix", "京东", None])


@st.composite
def lines_in(draw: st.DrawFn, span: tuple[date, date]) -> list[Line]:
    result = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["purchase", "refund", "fee", "interest", "payment", "adjustment"]))
        amount = draw(signed_amounts if kind == "adjustment" else amounts)
        day = span[0] + timedelta(days=draw(st.integers(0, (span[1] - span[0]).days)))
        result.append(
            Line(
                posted_on=day,
                kind=kind,
                amount=amount,
                merchant=draw(merchants),
                description=draw(st.sampled_from(["Late fee", "FX fee", None])),
            )
        )
    return result


@settings(max_examples=300, deadline=None)
@given(
    opening=st.decimals(min_value=D("-5000"), max_value=D("5000"), places=2),
    previous=lines_in(SEP),
    current=lines_in(OCT),
)
def test_drivers_sum_to_the_difference(opening: Decimal, previous: list[Line], current: list[Line]) -> None:
    facts = compute_facts(history(previous + current, [SEP, OCT], opening=str(opening)), as_of=date(2026, 11, 5))
    assert sum((d.amount for d in facts.drivers), ZERO) == facts.difference
    assert facts.difference == facts.statement.new_balance - facts.previous_balance
    assert all(d.amount != ZERO for d in facts.drivers)
    assert all(d.amount == d.amount.quantize(D("0.01")) for d in facts.drivers)
    sizes = [abs(d.amount) for d in facts.drivers]
    assert sizes == sorted(sizes, reverse=True)


@settings(max_examples=200, deadline=None)
@given(po=amounts, co=amounts, previous=lines_in(SEP), current=lines_in(OCT))
def test_drivers_decompose_any_two_statements(
    po: Decimal, co: Decimal, previous: list[Line], current: list[Line]
) -> None:
    result = drivers(po, totals(previous), co, totals(current))
    before = po + sum((signed(x.kind, x.amount) for x in previous), ZERO)
    after = co + sum((signed(x.kind, x.amount) for x in current), ZERO)
    assert sum((d.amount for d in result), ZERO) == after - before
