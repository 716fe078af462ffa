"""The JSON exchange format: customers with their accounts, statements and transactions, decoded and
checked whole (app/data/importer.py writes it).

What a file may hold, beyond its shape: dates from 1970-01-01 to 2099-12-31 (Postgres would keep
0001-01-01 or 9999-12-31 as -infinity/infinity, which no query can read back as a date); refs and
amounts without surrounding whitespace; no control character (NUL, line breaks, tabs, ...) in any
text. Every rejection names the field's JSON path. The CSV loader (app/data/csv_import.py) checks the
same rules in SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from decimal import Decimal
from itertools import pairwise
from typing import Annotated

import msgspec

from app import locales
from app.domain.vocabulary import Locale, TransactionKind
from app.errors import ImportRejected

_NO_CONTROL = r"\A[^\x00-\x1f\x7f-\x9f]*\Z"  # Postgres cannot hold NUL; no text here spans lines
_EDGE = r"[^\s\x00-\x1f\x7f-\x9f]"  # a ref's first and last character: not blank, not a control
Ref = Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=rf"\A{_EDGE}([^\x00-\x1f\x7f-\x9f]*{_EDGE})?\Z")]
Amount = Annotated[str, msgspec.Meta(pattern=r"\A-?[0-9]{1,12}(\.[0-9]{1,2})?\Z")]
Text200 = Annotated[str, msgspec.Meta(max_length=200, pattern=_NO_CONTROL)]

# The dates a file may hold (see the module's docstring).
FIRST_DATE, LAST_DATE = date(1970, 1, 1), date(2099, 12, 31)


class TransactionIn(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    ref: Ref
    posted_on: date
    kind: TransactionKind
    amount: Amount
    merchant: Text200 | None = None
    category: Annotated[str, msgspec.Meta(max_length=64, pattern=_NO_CONTROL)] | None = None
    description: Annotated[str, msgspec.Meta(max_length=500, pattern=_NO_CONTROL)] | None = None


class StatementIn(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    period_start: date
    period_end: date
    due_date: date
    minimum_due: Amount


class AccountIn(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    ref: Ref
    kind: Annotated[str, msgspec.Meta(min_length=1, max_length=32, pattern=_NO_CONTROL)]
    currency: Annotated[str, msgspec.Meta(pattern=r"\A[A-Z]{3}\Z")]
    masked_number: Annotated[str, msgspec.Meta(max_length=32, pattern=_NO_CONTROL)]
    opening_balance: Amount
    statements: list[StatementIn] = []
    transactions: list[TransactionIn] = []


class CustomerIn(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    ref: Ref
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=_NO_CONTROL)]
    locale: Locale  # one with a folder (app/locales.py), checked in _check
    accounts: list[AccountIn] = []


class ImportFile(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    tenant: Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=_NO_CONTROL)]
    customers: list[CustomerIn]


def parse(data: bytes | str) -> ImportFile:
    """Decode and check a whole file; raises ImportRejected naming the first bad field."""
    try:
        doc = msgspec.json.decode(data, type=ImportFile)
    except msgspec.ValidationError as exc:
        raise ImportRejected(str(exc)) from None
    except msgspec.DecodeError as exc:
        raise ImportRejected(f"not valid JSON: {exc}") from None
    _check(doc)
    return doc


def _check(doc: ImportFile) -> None:
    customer_refs: set[str] = set()
    account_refs: set[str] = set()
    for ci, customer in enumerate(doc.customers):
        at = f"$.customers[{ci}]"
        if customer.ref in customer_refs:
            raise ImportRejected(f"duplicate customer ref {customer.ref!r} - at `{at}.ref`")
        customer_refs.add(customer.ref)
        if customer.locale not in locales.registry():
            raise ImportRejected(f"locale must be one of {', '.join(locales.locales())} - at `{at}.locale`")
        for ai, account in enumerate(customer.accounts):
            at = f"$.customers[{ci}].accounts[{ai}]"
            if account.ref in account_refs:
                raise ImportRejected(f"duplicate account ref {account.ref!r} - at `{at}.ref`")
            account_refs.add(account.ref)
            _check_statements(account.statements, at)
            _check_transactions(account.transactions, at)


def _check_date(value: date, at: str) -> None:
    if not FIRST_DATE <= value <= LAST_DATE:
        raise ImportRejected(f"date {value} is outside {FIRST_DATE}..{LAST_DATE} - at `{at}`")


def _check_statements(statements: Sequence[StatementIn], at: str) -> None:
    for si, st in enumerate(statements):
        for name in ("period_start", "period_end", "due_date"):
            _check_date(getattr(st, name), f"{at}.statements[{si}].{name}")
        if st.period_start > st.period_end:
            raise ImportRejected(f"period_start is after period_end - at `{at}.statements[{si}].period_start`")
        if st.due_date < st.period_end:
            raise ImportRejected(f"due_date is before period_end - at `{at}.statements[{si}].due_date`")
        if Decimal(st.minimum_due) < 0:
            raise ImportRejected(f"minimum_due must not be negative - at `{at}.statements[{si}].minimum_due`")
    ordered = sorted(enumerate(statements), key=lambda pair: pair[1].period_start)
    for (_, before), (si, after) in pairwise(ordered):
        if after.period_start <= before.period_end:
            raise ImportRejected(
                f"statement periods overlap ({before.period_start}..{before.period_end} and "
                f"{after.period_start}..{after.period_end}) - at `{at}.statements[{si}].period_start`"
            )


def _check_transactions(transactions: Sequence[TransactionIn], at: str) -> None:
    refs: set[str] = set()
    for ti, tx in enumerate(transactions):
        _check_date(tx.posted_on, f"{at}.transactions[{ti}].posted_on")
        if tx.ref in refs:
            raise ImportRejected(f"duplicate transaction ref {tx.ref!r} - at `{at}.transactions[{ti}].ref`")
        refs.add(tx.ref)
        amount = Decimal(tx.amount)
        if tx.kind == "adjustment" and amount == 0:
            raise ImportRejected(f"an adjustment must not be zero - at `{at}.transactions[{ti}].amount`")
        if tx.kind != "adjustment" and amount <= 0:
            raise ImportRejected(
                f"amount must be positive for a {tx.kind} (only adjustments are signed) "
                f"- at `{at}.transactions[{ti}].amount`"
            )
