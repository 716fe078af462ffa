"""Personal data out of exported questions: what a customer typed may hold a name, a card number, an
IBAN or account number, an e-mail address or a phone number. Each is replaced by a placeholder that
keeps the question's shape for replay ("my card <card> was charged twice").

How each is found (measured on app/eval/pii_*.jsonl: `bill-assistant traffic pii-eval`, docs/privacy.md):
- e-mail: an address's shape (local part, @, a dotted domain);
- IBAN: two letters, two check digits and 11-30 letters or digits, any case, spaces, dots or dashes
  between them, valid by `stdnum.iban` (the country's length and format, mod-97 check digits; not
  the national bank-code registries, which lag behind real banks);
- card: 13-19 digits with any separators between groups (spaces, dashes, dots, none), glued to
  words or not ("no.4111111111111111,why"), whose Luhn sum holds (`stdnum.luhn`); 13 or more digits
  that fail it are still masked, as an account number (a mistyped card, an account);
- phone: libphonenumber (`phonenumbers.PhoneNumberMatcher`, leniency VALID: a number real in its
  region's numbering plan) with the regions the customer most likely dials from: those of the
  bank's currencies (GBP: GB), the locale's own list (prompts/locales/<locale>/pii.json) and that
  of the script the question is written in; a number written with its "+" country code is taken
  when merely possible there, and one in the North American 3-3-4 shape always;
- account: 6 or more digits right after an account word ("account 12345678", 账号);
- code: 3-8 digits right after a secret's word: a card's security code, a PIN, a one-time code
  ("cvv 123", 验证码 482913): nobody may replay them, whatever their length;
- names: app/pii/names.py (the bank's whole customer directory, and introduced names).

What must survive, decided so: an amount is never personal data: digits with cents ("1000000.00",
"1,250.00"), or followed by a currency word or preceded by its sign ("1234 5678 9012 yen", "12
yen", "€300", "88.00元"); nothing inside an amount is masked. References, order numbers and dates
of fewer than 13 digits that are neither a valid IBAN nor a valid phone number survive
("reference 20261015", "order number 123456"): the bank needs them to replay the question, and a
number that short identifies nobody without the bank's own records. Merchants survive unless they
are shaped like an introduced name; short numbers ("card ending 4821") survive.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Literal, NamedTuple

import phonenumbers
from stdnum import iban, luhn

from app import locales
from app.domain.vocabulary import Locale
from app.pii.names import Directory, find_names
from app.pii.words import every_locale, pii_words

Kind = Literal["email", "iban", "card", "phone", "account", "code", "name"]
KINDS: tuple[Kind, ...] = ("email", "iban", "card", "phone", "account", "code", "name")  # first wins an overlap
# The regions whose numbers a bank's customers most likely give, by the currency of its accounts.
CURRENCY_REGIONS = {
    "GBP": ("GB",),
    "USD": ("US",),
    "EUR": ("DE", "FR", "IE", "NL", "ES", "IT"),
    "CNY": ("CN",),
    "HKD": ("HK",),
    "JPY": ("JP",),
    "CHF": ("CH",),
    "SGD": ("SG",),
}

EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
IBAN_CANDIDATE = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:[ .-]?[A-Za-z0-9]){11,34}")
DIGIT_RUN = re.compile(r"(?<!\d)\d+(?:[ .-]\d+)*")
CENTS = re.compile(r"(?<![\d.,])\d+(?:[,.]\d{3})*[.,]\d{1,2}(?![\d]|[.,]\d)")
AMOUNT_NUMBER = r"\d+(?:[ ,.]\d+)*"
# The North American shape, (555) 123-4567 or 555-123-4567: a phone number even where its area code
# is in no numbering plan (555 is the fiction range customers and testers type).
NANP = re.compile(r"(?<![\d+])(?:\+?1[ .-]?)?(?:\(\d{3}\)[ ]?|\d{3}[ .-])\d{3}[ .-]\d{4}(?![\d])")


class Span(NamedTuple):
    start: int
    end: int
    kind: Kind


def _alternatives(words: Iterable[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))


@functools.cache
def _amount_patterns() -> tuple[re.Pattern[str], ...]:
    currency = _alternatives(w for locale in every_locale() for w in locale.currency)
    after = re.compile(rf"(?<![\d.,]){AMOUNT_NUMBER}\s?(?:{currency})(?![a-z])", re.IGNORECASE)
    before = re.compile(rf"(?:{currency})\s?{AMOUNT_NUMBER}", re.IGNORECASE)
    return CENTS, after, before


def _amounts(text: str) -> list[tuple[int, int]]:
    return [m.span() for pattern in _amount_patterns() for m in pattern.finditer(text)]


def _ibans(text: str) -> list[Span]:
    found = []
    for match in IBAN_CANDIDATE.finditer(text):
        candidate = match.group()
        for end in range(len(candidate), 14, -1):  # the longest stretch that validates
            if candidate[end - 1].isalnum() and iban.is_valid(candidate[:end], check_country=False):
                found.append(Span(match.start(), match.start() + end, "iban"))
                break
    return found


def _cards(text: str) -> list[Span]:
    """Card numbers (Luhn), and runs of 13 or more digits that are none (an account number)."""
    found = []
    for run in DIGIT_RUN.finditer(text):
        if text[: run.start()].endswith("+"):
            continue  # a phone number's country code
        groups = [(m.start() + run.start(), m.end() + run.start()) for m in re.finditer(r"\d+", run.group())]
        cards: list[Span] = []
        for size in range(len(groups), 0, -1):  # the most groups first: "4111 1111 1111 1111"
            for first in range(len(groups) - size + 1):
                start, end = groups[first][0], groups[first + size - 1][1]
                digits = re.sub(r"\D", "", text[start:end])
                clear = all(end <= c.start or start >= c.end for c in cards)
                if 13 <= len(digits) <= 19 and clear and luhn.is_valid(digits):
                    cards.append(Span(start, end, "card"))
        long = sum(e - s for s, e in groups) >= 13
        found += cards or ([Span(run.start(), run.end(), "account")] if long else [])
    return found


def _phones(text: str, regions: Iterable[str]) -> list[Span]:
    found: set[Span] = set()
    if sum(c.isdigit() for c in text) < 6:  # no number of any plan is shorter (and the matcher is slow)
        return []
    for region in regions:
        for match in phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.VALID):
            found.add(Span(match.start, match.end, "phone"))
        if "+" not in text:
            continue
        for match in phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.POSSIBLE):
            if match.raw_string.startswith("+"):  # its country code written out: no region to guess
                found.add(Span(match.start, match.end, "phone"))
    found.update(Span(m.start(), m.end(), "phone") for m in NANP.finditer(text))
    return sorted(found)


@functools.cache
def _account_pattern() -> re.Pattern[str]:
    words = _alternatives(w for locale in every_locale() for w in locale.account)
    marks = _alternatives(w for locale in every_locale() for w in locale.marks)
    return re.compile(rf"(?:{words})\.?\s*(?:{marks})?\s*(\d[\d -]{{4,}}\d)(?!\d)", re.IGNORECASE)


def _accounts(text: str) -> list[Span]:
    return [Span(m.start(1), m.end(1), "account") for m in _account_pattern().finditer(text)]


@functools.cache
def _code_pattern() -> re.Pattern[str]:
    words = _alternatives(w for locale in every_locale() for w in locale.secret)
    between = _alternatives(w for locale in every_locale() for w in (*locale.copulas, *locale.marks))
    return re.compile(rf"(?:{words})\s*(?:{between})?\s*(\d{{3,8}})(?!\d)", re.IGNORECASE)


def _codes(text: str) -> list[Span]:
    return [Span(m.start(1), m.end(1), "code") for m in _code_pattern().finditer(text)]


class Masker:
    """One bank's masking: its customer directory and the regions of its currencies, made once per
    export and used for every question."""

    def __init__(self, names: Iterable[str] = (), currencies: Iterable[str] = ()) -> None:
        self.directory = Directory(names)
        self.regions = tuple(r for c in sorted(set(currencies)) for r in CURRENCY_REGIONS.get(c.upper(), ()))

    def spans(self, text: str, locale: Locale | None = None) -> list[Span]:
        """The personal data in `text`, left to right, none overlapping another."""
        written = [w.regions for w in every_locale() if re.search(w.script, text)]  # 请打138…: China's
        regions = dict.fromkeys(
            (*pii_words(locale or locales.default()).regions, *self.regions, *(r for rs in written for r in rs))
        )
        amounts = _amounts(text)
        found = [
            *(Span(m.start(), m.end(), "email") for m in EMAIL.finditer(text)),
            *_ibans(text),
            *(s for s in _cards(text) if not _inside(s, amounts)),
            *(s for s in _phones(text, regions) if not _inside(s, amounts)),
            *(s for s in _accounts(text) if not _inside(s, amounts)),
            *_codes(text),
            *(Span(start, end, "name") for start, end in find_names(text, self.directory)),
        ]
        kept: list[Span] = []
        for span in sorted(_merged(found), key=lambda s: (KINDS.index(s.kind), s.start, s.start - s.end)):
            if all(span.end <= k.start or span.start >= k.end for k in kept):
                kept.append(span)
        joined: list[Span] = []
        for span in sorted(kept):  # "Mark" and "Johnson" of one person are one <name>
            gap = text[joined[-1].end : span.start] if joined else ""
            initial = bool(joined) and joined[-1].end - joined[-1].start == 1 and gap.strip() == "."  # J. Smith
            if joined and joined[-1].kind == span.kind == "name" and (not gap.strip() or initial):
                joined[-1] = joined[-1]._replace(end=span.end)
            else:
                joined.append(span)
        return joined

    def mask(self, text: str, locale: Locale | None = None) -> str:
        out, at = [], 0
        for span in self.spans(text, locale):
            out += [text[at : span.start], f"<{span.kind}>"]
            at = span.end
        return "".join(out) + text[at:]


def _merged(spans: list[Span]) -> list[Span]:
    """Overlapping spans of one kind as one ("Liam Murphy" and its part "Murphy")."""
    out: list[Span] = []
    for span in sorted(spans, key=lambda s: (s.kind, s.start)):
        if out and out[-1].kind == span.kind and span.start < out[-1].end:
            out[-1] = out[-1]._replace(end=max(out[-1].end, span.end))
        else:
            out.append(span)
    return out


def _inside(span: Span, amounts: list[tuple[int, int]]) -> bool:
    return any(start < span.end and span.start < end for start, end in amounts)


def mask(text: str, names: Iterable[str] = (), locale: Locale | None = None, currencies: Iterable[str] = ()) -> str:
    """The text with personal data replaced; `names`: the bank's customers (its directory)."""
    return Masker(names, currencies).mask(text, locale)
