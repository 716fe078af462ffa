"""Payment status edges: on the due date, a day after, exact amounts, credit balances."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from app.domain.facts import payment_status

DUE = date(2026, 11, 25)


@pytest.mark.parametrize(
    ("balance", "minimum", "paid", "as_of", "expected"),
    [
        ("124.99", "25.00", "124.99", DUE, "paid"),  # exactly the balance
        ("124.99", "25.00", "200.00", date(2026, 12, 30), "paid"),  # more than the balance, late
        ("0.00", "0.00", "0.00", date(2026, 12, 30), "paid"),  # nothing owed
        ("-15.00", "0.00", "0.00", DUE, "paid"),  # a credit balance
        ("124.99", "25.00", "0.00", date(2026, 11, 1), "unpaid"),
        ("124.99", "25.00", "0.00", DUE, "unpaid"),  # the due date itself is not late
        ("124.99", "25.00", "0.00", date(2026, 11, 26), "overdue"),  # the day after is
        ("124.99", "25.00", "24.99", date(2026, 11, 26), "overdue"),  # a cent short of the minimum
        ("124.99", "25.00", "25.00", date(2026, 11, 26), "partially_paid"),  # the minimum, late
        ("124.99", "25.00", "10.00", DUE, "partially_paid"),  # less than the minimum, not late yet
        ("124.99", "25.00", "124.98", date(2026, 11, 26), "partially_paid"),  # a cent short of the balance
        ("124.99", "0.00", "0.00", date(2026, 11, 26), "unpaid"),  # no minimum: nothing can be overdue
    ],
)
def test_payment_status(balance: str, minimum: str, paid: str, as_of: date, expected: str) -> None:
    assert payment_status(Decimal(balance), Decimal(minimum), DUE, Decimal(paid), as_of) == expected
