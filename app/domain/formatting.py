"""How amounts and dates are written for a customer in each locale."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from app.domain.money import cents

MONTHS_EN = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
# Chinese currency names; English text uses the ISO code, which bank customers recognise.
CURRENCY_ZH = {"CNY": "元", "EUR": "欧元", "USD": "美元", "GBP": "英镑", "HKD": "港元", "JPY": "日元"}


def number(amount: Decimal) -> str:
    """1234.5 -> '1,234.50' (grouping and decimal point are the same in en and zh-CN)."""
    return f"{cents(abs(amount)):,.2f}"


def money(amount: Decimal, currency: str, locale: str, *, sign: bool = False) -> str:
    prefix = ("+" if amount > 0 else "-" if amount < 0 else "") if sign else ("-" if amount < 0 else "")
    if locale == "zh-CN":
        return f"{prefix}{number(amount)}{CURRENCY_ZH.get(currency, ' ' + currency)}"
    return f"{prefix}{number(amount)} {currency}"


def day(value: date, locale: str) -> str:
    if locale == "zh-CN":
        return f"{value.year}年{value.month}月{value.day}日"
    return f"{value.day} {MONTHS_EN[value.month - 1]} {value.year}"
