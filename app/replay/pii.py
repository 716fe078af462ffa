"""Personal data out of exported questions: what a customer typed may hold their name, a card or
account number, an e-mail address or a phone number. Each is replaced by a placeholder that keeps
the question's shape for replay ("my card <card> was charged twice").

What a bill question needs stays: amounts ("the 12.00 one", "12 euro"), dates, merchants ("City
Gym"), short numbers. Names are the customer's own (known from the account: the surest signal), and
what follows "my name is", "I am" (capitalized), "this is", "我叫", "我的名字是"; a name nobody
introduces and the export does not know is not found (no list of first names guesses at them).
Chinese has no spaces: after "我叫" the next two or three characters are taken.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){11,30}\b")
# 13-19 digits, optionally in groups split by spaces or dashes: a card if its Luhn sum holds.
LONG_DIGITS = re.compile(r"(?<![\d.,+])\d(?:[ -]?\d){12,18}(?![\d.,]\d)")
PHONE = re.compile(
    r"(?:\+\d{1,3}[ -]?)?(?:\(\d{2,4}\)[ -]?)?\d{2,4}[ -]\d{3,4}[ -]\d{3,4}(?!\d)"  # +44 20 7946 0958, 555-123-4567
    r"|\+\d{8,15}(?!\d)"  # +4915112345678
    r"|(?<!\d)1[3-9]\d{9}(?!\d)"  # a Chinese mobile number
)
# Six or more digits in a row (not an amount's decimals): an account, customer or reference number.
NUMBER = re.compile(r"(?<![\d.,])\d{6,}(?![.,]\d)")
INTRODUCED = re.compile(
    r"(?i:\b(?:my name is|i am|i'm|this is|name:)\s+)((?:[A-Z][\w'-]+)(?:\s+[A-Z][\w'-]+){0,2})"
    r"|(?:我叫|我的名字是)([\u4e00-\u9fff]{2,3})"
)


def _luhn(digits: str) -> bool:
    total = 0
    for i, d in enumerate(reversed(digits)):
        n = int(d) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0


def _long_number(match: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", match.group())
    return "<card>" if _luhn(digits) else "<account>"


def _introduced(match: re.Match[str]) -> str:
    name = match.group(1) or match.group(2)
    start, end = match.span(1) if match.group(1) else match.span(2)
    whole = match.group()
    offset = match.start()
    return whole[: start - offset] + "<name>" + whole[end - offset :] if name else whole


def mask(text: str, names: Iterable[str] = ()) -> str:
    """The text with personal data replaced; `names`: people known to be the asker (the account's
    customer), masked wherever they appear, in any case."""
    text = EMAIL.sub("<email>", text)  # first: an address may hold the name
    for name in sorted({n.strip() for n in names if len(n.strip()) >= 2}, key=len, reverse=True):
        text = re.sub(re.escape(name), "<name>", text, flags=re.IGNORECASE)
        for part in name.split():  # "Ann" of "Ann Lee"; a one-letter initial says nothing
            if len(part) >= 3:
                text = re.sub(rf"\b{re.escape(part)}\b", "<name>", text, flags=re.IGNORECASE)
    text = IBAN.sub("<account>", text)
    text = LONG_DIGITS.sub(_long_number, text)
    text = PHONE.sub("<phone>", text)
    text = NUMBER.sub("<account>", text)
    return INTRODUCED.sub(_introduced, text)
