"""Money is Decimal with two places; nothing here ever touches a float."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

CENT = Decimal("0.01")
ZERO = Decimal("0.00")

# How each transaction kind moves the balance the customer owes.
SIGN = {"purchase": 1, "fee": 1, "interest": 1, "adjustment": 1, "refund": -1, "payment": -1}


def cents(value: Decimal) -> Decimal:
    return value.quantize(CENT, rounding=ROUND_HALF_EVEN)


def signed(kind: str, amount: Decimal) -> Decimal:
    """The amount as it moves the balance: refunds and payments reduce it."""
    return amount * SIGN[kind]
