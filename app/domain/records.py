"""What the database hands the domain: an account's statement history and its transactions."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import msgspec

from app.domain.vocabulary import Locale


class Line(msgspec.Struct, frozen=True, kw_only=True):
    """A posted transaction. amount is positive except for adjustments, which are signed."""

    posted_on: date
    kind: str
    amount: Decimal
    merchant: str | None = None
    description: str | None = None


class Period(msgspec.Struct, frozen=True, kw_only=True):
    """A statement, with the signed sum of the transactions posted in its period."""

    id: int
    period_start: date
    period_end: date
    due_date: date
    minimum_due: Decimal
    net: Decimal
    data_version: int = 1  # changes whenever anything this statement's answers depend on changes


class AccountHistory(msgspec.Struct, frozen=True, kw_only=True):
    """An account with every statement up to the one asked about (oldest first) and the lines
    from the start of the previous statement's period up to the later of period end and as_of."""

    account_id: int
    account_ref: str
    currency: str
    opening_balance: Decimal
    customer_ref: str
    customer_locale: Locale
    statements: list[Period]
    lines: list[Line]
