"""How amounts and dates are written for a customer: each locale's way (its folder's locale.json,
read at the edge by app/locales.py) is handed in as a `Style`; nothing here names a locale."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import msgspec

from app.domain.money import cents


class Style(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A locale's way of writing amounts and dates: `money` and `day` are patterns with the fields
    {sign} {number} {currency} and {day} {month} {year}; `currencies` names a currency where the
    locale says it in words (the ISO code otherwise, which bank customers recognise)."""

    months: tuple[str, ...]
    money: str = "{sign}{number} {currency}"
    day: str = "{day} {month} {year}"
    currencies: dict[str, str] = {}
    unnamed: str = "{sign}{number} {currency}"  # a currency the locale has no word for


def number(amount: Decimal) -> str:
    """1234.5 -> '1,234.50'."""
    return f"{cents(abs(amount)):,.2f}"


def money(amount: Decimal, currency: str, style: Style, *, sign: bool = False) -> str:
    prefix = ("+" if amount > 0 else "-" if amount < 0 else "") if sign else ("-" if amount < 0 else "")
    named = style.currencies.get(currency)
    pattern = style.money if named or not style.currencies else style.unnamed
    return pattern.format(sign=prefix, number=number(amount), currency=named or currency)


def day(value: date, style: Style) -> str:
    return style.day.format(day=value.day, month=style.months[value.month - 1], year=value.year)
