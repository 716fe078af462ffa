"""What the database hands the domain: an account's statement history, the totals of the statement
asked about and of the one before, and the lines an answer may name."""

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


class Total(msgspec.Struct, frozen=True, kw_only=True):
    """The lines of one kind and label in a statement's period (app/domain/facts.py `line_label`)."""

    kind: str
    label: str
    amount: Decimal
    lines: int


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
    """An account with every statement up to the one asked about (oldest first) and its lines.

    Two forms, which give the same facts (app/domain/facts.py `summarize` turns the first into the
    second, as the database's statement summaries do):
    - the ledger: `lines` from the start of the previous statement's period up to the later of period
      end and as_of, `totals` None;
    - the summary the database reads: `totals` and `previous_totals` of the last two statements, and
      of the lines only those an answer may name (`nameable`, and the largest of the merchants or fees
      the question names) and the payments after the close."""

    account_id: int
    account_ref: str
    currency: str
    opening_balance: Decimal
    customer_ref: str
    customer_locale: Locale
    statements: list[Period]
    lines: list[Line]
    totals: list[Total] | None = None
    previous_totals: list[Total] | None = None  # [] when there is no previous statement
