"""Checks a model's explanation against the facts before any customer reads it.

Every amount, percentage and date the text mentions must be a fact; any word about paid, unpaid,
partial or overdue must agree with the payment status; the text must be non-empty, not too long,
and in the language asked for. Anything else is refused, and the deterministic answer is served.
"""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal, InvalidOperation

import msgspec

from app.domain.facts import BillFacts, PaymentStatus
from app.domain.formatting import MONTHS_EN
from app.domain.reasons import Reason, Rule

MAX_CHARS = 800


class Verdict(msgspec.Struct, frozen=True):
    reason: Reason | None = None  # why the text is refused; None: it may be served

    @property
    def ok(self) -> bool:
        return self.reason is None

    @property
    def rule(self) -> Rule | None:
        return self.reason.rule if self.reason else None


OK = Verdict()


def _refuse(rule: Rule, detail: str = "") -> Verdict:
    return Verdict(Reason(rule=rule, detail=detail))


_MONTH = {name.lower(): i + 1 for i, name in enumerate(MONTHS_EN)} | {
    name[:3].lower(): i + 1 for i, name in enumerate(MONTHS_EN)
}
_MONTHS_RE = "|".join(sorted(_MONTH, key=len, reverse=True))
_YEAR = r"(?:,?\s+(?P<y>\d{4}))?"
_DATES = [  # each match names (y?, m | mn, d) or (a, b, y) for d/m/y and m/d/y
    re.compile(r"(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})"),
    re.compile(r"(?:(?P<y>\d{4})\s*年\s*)?(?P<m>\d{1,2})\s*月\s*(?P<d>\d{1,2})\s*[日号]"),
    re.compile(rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?(?:\s+of)?\s+(?P<mn>{_MONTHS_RE})\.?{_YEAR}", re.I),
    re.compile(rf"\b(?P<mn>{_MONTHS_RE})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?{_YEAR}", re.I),
    re.compile(r"\b(?P<a>\d{1,2})/(?P<b>\d{1,2})/(?P<y>\d{4})\b"),
]
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s*(?:%|％|percent\b|per cent\b)|百分之\s*(\d+(?:\.\d+)?)", re.I)
_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
_CJK = re.compile(r"[\u3400-\u9fff]")
_LATIN = re.compile(r"[A-Za-z]")

# Claims about the payment, per language. Negated "paid in full" is a partial/unpaid claim, so it
# is taken out before the "paid" claim is looked for.
_NOT_IN_FULL = re.compile(
    r"\bnot\s+(?:yet\s+)?(?:been\s+)?(?:paid\s+in\s+full|fully\s+paid)\b|未全额|没有全额|未还清|没有还清"
)
_CLAIMS: dict[str, re.Pattern[str]] = {
    "paid": re.compile(
        r"\bpaid\s+in\s+full\b|\bfully\s+paid\b|\b(?:bill|statement|balance)\s+(?:is|has\s+been)\s+(?:paid|settled)\b"
        r"|\bsettled\b|\bnothing\s+(?:left\s+)?to\s+pay\b|已还清|已全额还款|已结清|已付清|全额还清|无需还款",
        re.I,
    ),
    "unpaid": re.compile(
        r"\bunpaid\b|\bnot\s+(?:yet\s+)?(?:been\s+)?paid\b|\bhave\s*n[o']t\s+(?:yet\s+)?paid\b|\bno\s+payment\b"
        r"|\bnot\s+(?:yet\s+)?received\b|\bhaven't\s+received\b|未还款|尚未还款|还没有还款|没有还款|未支付|尚未收到|没有收到|未收到",
        re.I,
    ),
    "partial": re.compile(
        r"\bpartial(?:ly)?\b|\bstill\s+(?:owe|outstanding)\b|\bremaining\b|部分|待还|剩余|仍欠", re.I
    ),
    "overdue": re.compile(r"\boverdue\b|\bpast\s+due\b|\bmissed\b|逾期|已过还款日", re.I),
    # No fact ever says a payment failed: such a claim is always invented.
    "payment_problem": re.compile(
        r"\b(?:failed|declined|rejected|cancell?ed|reversed|bounced|delayed|processing\s+error)\b"
        r"|失败|被拒|拒绝|取消|退回|延迟|处理错误",
        re.I,
    ),
}


def _allowed_claims(status: PaymentStatus, paid: Decimal) -> set[str]:
    if status == "paid":
        return {"paid"}
    if status == "unpaid":
        return {"unpaid"}
    if status == "partially_paid":
        return {"partial"}
    return {"overdue", "partial"} if paid > 0 else {"overdue", "unpaid"}


def fact_amounts(facts: BillFacts) -> set[Decimal]:
    s = facts.statement
    values = {
        s.new_balance, s.opening_balance, s.minimum_due, facts.previous_balance, facts.difference,
        facts.payment.paid_amount, facts.payment.outstanding,
        *(d.amount for d in facts.drivers), *(e.amount for e in facts.entries),
        *(e.amount for e in facts.payments_received),
    }  # fmt: skip
    return {abs(v) for v in values}


def fact_dates(facts: BillFacts) -> set[date]:
    s = facts.statement
    days = {s.period_start, s.period_end, s.due_date, facts.as_of}
    if facts.previous:
        days |= {facts.previous.period_start, facts.previous.period_end, facts.previous.due_date}
    return days | {e.posted_on for e in facts.entries} | {e.posted_on for e in facts.payments_received}


def _day(year: int | None, month: int, day: int, known: set[date]) -> bool:
    return any(d.month == month and d.day == day and (year is None or d.year == year) for d in known)


def _check_dates(text: str, known: set[date]) -> tuple[str, str | None]:
    """Blank out every date (so its digits are not read as amounts); return the first unknown one."""
    for pattern in _DATES:
        for match in pattern.finditer(text):
            parts = match.groupdict()
            year = int(parts["y"]) if parts.get("y") else None
            if "a" in parts:
                a, b = int(parts["a"]), int(parts["b"])
                good = _day(year, a, b, known) or _day(year, b, a, known)
            else:
                month = int(parts["m"]) if parts.get("m") else _MONTH[parts["mn"].lower().rstrip(".")]
                good = _day(year, month, int(parts["d"]), known)
            if not good:
                return text, match.group(0)
        text = pattern.sub(lambda m: " " * len(m.group(0)), text)
    return text, None


def validate(text: str, facts: BillFacts, locale: str, *, max_chars: int = MAX_CHARS) -> Verdict:
    stripped = text.strip()
    if not stripped:
        return _refuse("empty")
    if len(stripped) > max_chars:
        return _refuse("too_long", str(len(stripped)))
    cjk, latin = len(_CJK.findall(stripped)), len(_LATIN.findall(stripped))
    share = cjk / (cjk + latin) if cjk + latin else 0.0
    if (locale == "zh-CN" and share < 0.4) or (locale == "en" and share > 0.2):
        return _refuse("wrong_language", f"{share:.2f}")

    rest, bad_date = _check_dates(stripped, fact_dates(facts))
    if bad_date:
        return _refuse("unknown_date", bad_date)
    if percent := _PERCENT.search(rest):
        return _refuse("unknown_percentage", percent.group(0))  # no fact is a percentage
    allowed = fact_amounts(facts)
    for match in _NUMBER.finditer(rest):
        try:
            value = Decimal(match.group(0).replace(",", ""))
        except InvalidOperation:  # pragma: no cover - the pattern only matches numbers
            return _refuse("unreadable_number", match.group(0))
        if value not in allowed:
            return _refuse("unknown_amount", match.group(0))

    claims_text = _NOT_IN_FULL.sub(" partially ", stripped)
    claims = {name for name, pattern in _CLAIMS.items() if pattern.search(claims_text)}
    wrong = claims - _allowed_claims(facts.payment.status, facts.payment.paid_amount)
    if wrong:
        return _refuse("status_contradiction", ",".join(sorted(wrong)))
    return OK
