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

import re
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation
from typing import Literal, get_args

import msgspec

from app.domain.facts import BillFacts, PaymentStatus
from app.domain.validation import MONTHS_EN
from app.domain.vocabulary import Intent

Kind = Literal["status_flip", "wrong_amount", "wrong_direction", "wrong_driver"]
KINDS: tuple[Kind, ...] = get_args(Kind)


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    kind: Kind
    detail: str


# --- payment status -------------------------------------------------------------------------------
# Negations that would otherwise read as the claim they negate are rewritten first.
_REWRITES = [
    (
        re.compile(
            r"\bnot\s+(?:yet\s+)?(?:been\s+)?(?:paid\s+in\s+full|fully\s+paid)\b|未全额还款?|没有全额|未还清|没有还清",
            re.I,
        ),
        " partially ",
    ),
    (re.compile(r"\bnot\s+(?:yet\s+)?overdue\b|\bisn't\s+overdue\b|未逾期|没有逾期|不会逾期|尚未逾期", re.I), " "),
]
_CLAIMS: dict[str, re.Pattern[str]] = {
    "paid_in_full": re.compile(
        r"\bpaid\s+in\s+full\b|\bfully\s+paid\b|\b(?:bill|statement|balance)\s+(?:is|has\s+been)\s+(?:paid|settled)\b"
        r"|\bsettled\b|\bnothing\s+(?:left\s+)?to\s+pay\b|已还清|已全额还款|已结清|已付清|全额还清|无需还款",
        re.I,
    ),
    # Some payment arrived: true when paid, partially paid, or overdue with a payment.
    "payment_made": re.compile(
        r"(?<![未没尚])已还款|(?<![未没])(?:已|已经)收到(?:您的)?(?:还款|付款)|\byou\s+(?:have\s+|'ve\s+)?(?:already\s+)?paid\b"
        r"|\breceived\s+your\s+payment\b|\byour\s+payment\s+(?:has\s+)?(?:arrived|been\s+received)\b",
        re.I,
    ),
    "unpaid": re.compile(
        r"\bunpaid\b|\bnot\s+(?:yet\s+)?(?:been\s+)?paid\b|\bhave\s*n[o']t\s+(?:yet\s+)?paid\b|\bno\s+payment\b"
        r"|\bnot\s+(?:yet\s+)?(?:been\s+)?received\b|\bhaven't\s+received\b|未还款|尚未还款|还没有还款|没有还款|未支付"
        r"|尚未收到|没有收到|未收到",
        re.I,
    ),
    "partial": re.compile(r"\bpartial(?:ly)?\b|\bpart\s+of\s+(?:the|your)\s+(?:bill|balance)\b|部分", re.I),
    "overdue": re.compile(r"\boverdue\b|\bpast\s+due\b|\bmissed\b|逾期|已过还款日", re.I),
}


def allowed_claims(status: PaymentStatus, paid: Decimal) -> set[str]:
    if status == "paid":
        return {"paid_in_full", "payment_made"}
    if status == "unpaid":
        return {"unpaid"}
    if status == "partially_paid":
        return {"partial", "payment_made"}
    return {"overdue", "partial", "payment_made"} if paid > 0 else {"overdue", "unpaid"}


def status_claims(text: str) -> set[str]:
    for pattern, replacement in _REWRITES:
        text = pattern.sub(replacement, text)
    return {name for name, pattern in _CLAIMS.items() if pattern.search(text)}


# --- amounts --------------------------------------------------------------------------------------
_MONTHS = "|".join(sorted((*MONTHS_EN, *(m[:3] for m in MONTHS_EN)), key=len, reverse=True))
_DATES = [
    re.compile(r"\d{4}-\d{1,2}-\d{1,2}"),
    re.compile(r"(?:\d{4}\s*年\s*)?\d{1,2}\s*月\s*\d{1,2}\s*[日号]?"),
    re.compile(rf"\b\d{{1,2}}(?:st|nd|rd|th)?(?:\s+of)?\s+(?:{_MONTHS})\.?(?:,?\s+\d{{4}})?", re.I),
    re.compile(rf"\b(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?", re.I),
    re.compile(r"\b\d{1,2}/\d{1,2}/\d{4}\b"),
]
_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
_SENTENCE_END = re.compile(r"[.!?,](?:\s|$)|[。！？；;，\n]")
_LABELS: list[tuple[str, re.Pattern[str]]] = [
    ("new_balance", re.compile(r"(?:new|statement|current)\s+balance|本期账单(?:金额)?|新余额|本期余额", re.I)),
    ("previous_balance", re.compile(r"previous\s+balance|last\s+month(?:'s)?|上期(?:账单)?|上个?月(?:的账单)?", re.I)),
    (
        "difference",
        re.compile(
            r"(?:higher|lower|more|less|up|down|increased?|decreased?|changed?|rose|fell)\s+by"
            r"|(?:increase|decrease|change|difference)\s+of|增加了?|减少了?|多了|少了|变化了?|相差"
            r"|比上个?[月期][^，,。\d]*?[多少]",
            re.I,
        ),
    ),
    ("minimum_due", re.compile(r"minimum(?:\s+payment)?|最低还款(?:额)?", re.I)),
    ("outstanding", re.compile(r"outstanding|still\s+to\s+pay|still\s+owe|remaining|待还|仍欠|剩余", re.I)),
    ("paid_amount", re.compile(r"(?<![未没尚])收到(?:您的)?(?:还款)?|\bwe\s+(?:have\s+)?received\b", re.I)),
]
_NEGATED = re.compile(r"(?:\bnot\b|n't|未|没有|尚未)\W{0,3}\w{0,8}$", re.I)
_DETACHED = re.compile(r"[:：(（]")
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
    for pattern in _DATES:
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
        before = before[max((m.end() for m in _SENTENCE_END.finditer(before)), default=0) :]
        last = max(
            ((m.end(), m.start(), name) for name, pattern in _LABELS for m in pattern.finditer(before)), default=None
        )
        if last is None or _NUMBER.search(before[last[0] :]) or _NEGATED.search(before[: last[1]]):
            continue  # no label, another number took it, or a negated label ("not received")
        if _DETACHED.search(before[last[0] :].lstrip(" :：")):
            continue  # "changes from last month: purchases at X (+12.00)": the label heads a list
        if value != abs(bound[last[2]]):
            wrong.append(f"{last[2]}={raw}")
    return wrong


# --- direction ------------------------------------------------------------------------------------
_UP = re.compile(
    r"\b(?:higher|increased?|increasing|went\s+up|rose|risen|grew)\b|增加|多了|上升|上涨|高于|增长|比上个?[月期][^，,。]*?多",
    re.I,
)
_DOWN = re.compile(
    r"\b(?:lower|decreased?|decreasing|went\s+down|dropped|fell|fallen|reduced)\b|减少|少了|下降|降低|低于|比上个?[月期][^，,。]*?少",
    re.I,
)
# "The balance carried over after your payments" is a driver, not the bill.
_BILL = re.compile(r"\b(?:bill|balance(?!\s+carried)|statement)\b|账单|(?<!结转)余额", re.I)
_SENTENCE_SPLIT = re.compile(r"[.!?](?=\s|$)|[。！？\n]")


def direction_findings(text: str, difference: Decimal) -> list[str]:
    """Claims about the bill's direction (in sentences that speak of the bill) against the difference."""
    wrong = []
    for sentence in _SENTENCE_SPLIT.split(text):
        if not _BILL.search(sentence):
            continue
        for pattern, sign in ((_UP, 1), (_DOWN, -1)):
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
