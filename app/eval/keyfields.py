"""Key-field errors in a model's raw answer, before validation: what an engine change must not break.

Four kinds, each a finding with what was wrong (the text the finding quotes):
- `status_flip`: a claim about the payment that contradicts its status ("已还款"/"paid in full" when
  nothing arrived, "未还款"/"unpaid" when it was paid, "overdue" before the due date, ...). A status
  flip is an incident, never a quality dip (DESIGN.md, rule 1).
- `wrong_amount`: a number that is no fact at all, or that follows a label ("new balance",
  "minimum", "上月", "待还", ...) and is not that label's fact.
- `wrong_direction`: the bill is said to be higher (increase, 增加, 多了) when it went down, lower
  when it went up, or either when it did not change.
- `wrong_driver`: for a bill change, a merchant or fee named that is not a driver of the change; for
  other questions, one that is not on the statement. Names come from `known` (the golden set's).

This classifier is the eval's own and deliberately separate from the validator's rules
(app/domain/validation.py): it counts what the raw output gets wrong, by kind, so that a validator
change cannot hide a model regression, and the validator's answer (served or not) is reported beside
it. Dates are blanked before numbers are read; a bare 4-digit integer from 1900 to 2100 is a year.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation
from typing import Any, Literal, get_args

import msgspec

from app import locales
from app.domain.facts import BillFacts, PaymentStatus
from app.domain.vocabulary import Intent

Kind = Literal["status_flip", "wrong_amount", "wrong_direction", "wrong_driver"]
KINDS: tuple[Kind, ...] = get_args(Kind)


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    kind: Kind
    detail: str


# Every locale's words for the four kinds are its folder's keyfields.json (app/locales.py), joined here
# into one pattern each: an answer is read in whichever language it came in.
@functools.cache
def _words() -> _Words:
    return _Words(locales.each("keyfields.json"))


locales.on_change(_words.cache_clear)


class _Words:
    def __init__(self, parts: dict[str, dict[str, Any]]) -> None:
        found = list(parts.values())

        def either(name: str) -> re.Pattern[str]:
            return re.compile("|".join(dict.fromkeys(f[name] for f in found if f.get(name))), re.I)

        def keyed(name: str) -> dict[str, re.Pattern[str]]:
            keys = dict.fromkeys(k for f in found for k in f.get(name, {}))
            return {k: re.compile("|".join(f[name][k] for f in found if f.get(name, {}).get(k)), re.I) for k in keys}

        # Negations that would otherwise read as the claim they negate are rewritten first.
        self.rewrites = [(re.compile(p, re.I), to) for f in found for p, to in f.get("rewrites", ())]
        self.claims = keyed("claims")
        # ISO and day/month/year dates in any locale; then each locale's own ways.
        self.dates = [
            re.compile(r"\d{4}-\d{1,2}-\d{1,2}"),
            *(re.compile(d, re.I) for d in dict.fromkeys(d for f in found for d in f.get("dates", ()))),
            re.compile(r"\b\d{1,2}/\d{1,2}/\d{4}\b"),
        ]
        self.sentence_end = either("sentence_end")
        self.labels = list(keyed("labels").items())
        self.negated = either("negated")
        colons = "".join(dict.fromkeys(f.get("colons", "") for f in found))
        brackets = "".join(dict.fromkeys(f.get("brackets", "") for f in found))
        self.colons = " " + colons
        self.detached = re.compile(f"[{re.escape(colons + brackets)}]")
        self.up, self.down, self.bill = either("up"), either("down"), either("bill")
        self.sentence_split = either("sentence_split")


def allowed_claims(status: PaymentStatus, paid: Decimal) -> set[str]:
    if status == "paid":
        return {"paid_in_full", "payment_made"}
    if status == "unpaid":
        return {"unpaid"}
    if status == "partially_paid":
        return {"partial", "payment_made"}
    return {"overdue", "partial", "payment_made"} if paid > 0 else {"overdue", "unpaid"}


def status_claims(text: str) -> set[str]:
    words = _words()
    for pattern, replacement in words.rewrites:
        text = pattern.sub(replacement, text)
    return {name for name, pattern in words.claims.items() if pattern.search(text)}


# --- amounts --------------------------------------------------------------------------------------
_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
_WINDOW = 40  # a label binds the first number within this many characters after it


def _blank(text: str, pattern: re.Pattern[str]) -> str:
    return pattern.sub(lambda m: " " * len(m.group(0)), text)


def fact_amounts(facts: BillFacts) -> set[Decimal]:
    """Every amount the facts hold (unsigned): any other number in an answer is invented."""
    s, p = facts.statement, facts.payment
    values = {
        s.new_balance,
        s.opening_balance,
        s.minimum_due,
        facts.previous_balance,
        facts.difference,
        p.paid_amount,
        p.outstanding,
        *(d.amount for d in facts.drivers),
        *(e.amount for e in facts.entries),
        *(e.amount for e in facts.payments_received),
    }
    return {abs(v) for v in values}


def _bound_facts(facts: BillFacts) -> dict[str, Decimal]:
    s, p = facts.statement, facts.payment
    return {
        "new_balance": s.new_balance,
        "previous_balance": facts.previous_balance,
        "minimum_due": s.minimum_due,
        "outstanding": p.outstanding,
        "paid_amount": p.paid_amount,
        "difference": facts.difference,
    }


def amount_findings(text: str, facts: BillFacts, allowed: set[Decimal]) -> list[str]:
    words = _words()
    for pattern in words.dates:
        text = _blank(text, pattern)
    bound = _bound_facts(facts)
    wrong = []
    for match in _NUMBER.finditer(text):
        raw = match.group(0)
        try:
            value = abs(Decimal(raw.replace(",", "")))
        except InvalidOperation:  # pragma: no cover - the pattern only matches numbers
            continue
        if "." not in raw and "," not in raw and 1900 <= value <= 2100:
            continue  # a year
        if value not in allowed:
            wrong.append(raw)
            continue
        before = text[max(0, match.start() - _WINDOW) : match.start()]
        before = before[max((m.end() for m in words.sentence_end.finditer(before)), default=0) :]
        last = max(
            ((m.end(), m.start(), name) for name, pattern in words.labels for m in pattern.finditer(before)),
            default=None,
        )
        if last is None or _NUMBER.search(before[last[0] :]) or words.negated.search(before[: last[1]]):
            continue  # no label, another number took it, or a negated label ("not received")
        if words.detached.search(before[last[0] :].lstrip(words.colons)):
            continue  # "changes from last month: purchases at X (+12.00)": the label heads a list
        if value != abs(bound[last[2]]):
            wrong.append(f"{last[2]}={raw}")
    return wrong


# --- direction ------------------------------------------------------------------------------------
def direction_findings(text: str, difference: Decimal) -> list[str]:
    """Claims about the bill's direction (in sentences that speak of the bill) against the difference."""
    words = _words()
    wrong = []
    for sentence in words.sentence_split.split(text):
        if not words.bill.search(sentence):
            continue
        for pattern, sign in ((words.up, 1), (words.down, -1)):
            if (found := pattern.search(sentence)) and (difference == 0 or (difference > 0) != (sign > 0)):
                wrong.append(found.group(0))
    return wrong


# --- drivers --------------------------------------------------------------------------------------
def driver_findings(text: str, facts: BillFacts, intent: Intent, known: Iterable[str]) -> list[str]:
    drivers = {d.label for d in facts.drivers if d.label}
    allowed = drivers if intent == "bill_change" else drivers | facts.labels
    lowered = text.lower()
    # An empty label (an interest or payment line has none) is in every text: never a name.
    return sorted(name for name in known if name and name.lower() in lowered and name not in allowed)


def key_field_errors(text: str, facts: BillFacts, intent: Intent, *, known: Iterable[str]) -> list[Finding]:
    """Every key-field error in a model's answer text (the string inside its JSON), by kind."""
    status = facts.payment
    flips = sorted(status_claims(text) - allowed_claims(status.status, status.paid_amount))
    return [
        *(Finding(kind="status_flip", detail=f"{claim} ({status.status})") for claim in flips),
        *(Finding(kind="wrong_amount", detail=d) for d in amount_findings(text, facts, fact_amounts(facts))),
        *(Finding(kind="wrong_direction", detail=d) for d in direction_findings(text, facts.difference)),
        *(Finding(kind="wrong_driver", detail=d) for d in driver_findings(text, facts, intent, known)),
    ]
