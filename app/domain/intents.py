"""What the customer asks about, decided without a model call (English and Chinese keywords).

Requests nobody here may serve (a credit limit, a loan) are recognised first; then specific
intents are checked before the general one: "why was I charged interest?" is about fees
and interest, not about an unknown charge; "why is my bill higher?" is a bill change.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from app.domain.vocabulary import Intent, Locale

# The one question per intent whose answer may be cached: precomputed, or generated at batch
# priority after a miss. A customer's own wording is never cached (app/answers/cache.py).
CANONICAL_QUESTIONS: dict[Intent, dict[Locale, str]] = {
    "bill_change": {"en": "Why is my bill different from last month?", "zh-CN": "为什么这个月的账单和上个月不一样？"},
    "fees_interest": {"en": "Why was I charged fees or interest?", "zh-CN": "为什么我被收取了费用或利息？"},
    "payment": {"en": "Did my payment arrive, and when is it due?", "zh-CN": "我的还款到账了吗？什么时候到期？"},
}

_RULES: list[tuple[Intent, re.Pattern[str]]] = [
    # Requests the assistant cannot serve, even when they mention the bill: a person must.
    (
        "out_of_scope",
        re.compile(
            r"\b(credit\s+limit|loans?|mortgage|password|pin|address|weather|invest(ment)?s?|stocks?|crypto)\b"
            r"|贷款|密码|额度|地址|天气|投资|股票"
        ),
    ),
    (
        "payment",
        re.compile(
            r"\b(pay|paid|payment|payments|due|overdue|minimum|arrive[ds]?|received|repay)\b"
            r"|还款|付款|到账|到期|逾期|最低|缴费|还了|还清|收到"
        ),
    ),
    ("fees_interest", re.compile(r"\b(fees?|interest|apr|penalty|penalties)\b|(?<![消扣])费|利息|违约金|罚息")),
    (
        "charge",
        re.compile(
            r"\b(charges?|charged|transactions?|purchases?|merchant|debit|what is this|who is)\b"
            r"|这笔|消费|扣款|交易|商户|扣费|是什么"
        ),
    ),
    (
        "bill_change",
        re.compile(
            r"\b(bill|statement|balance|higher|lower|more|less|increase[ds]?|decrease[ds]?|went up|went down"
            r"|differen(t|ce)|change[ds]?|owe)\b|账单|多了|少了|增加|减少|变化|余额|上个月|这个月|本月|上月"
        ),
    ),
]


def classify(question: str, merchants: Iterable[str] = ()) -> Intent:
    intent, labels_matter = provisional(question)
    text = question.lower()
    if labels_matter and any(key in text for key in label_keys(merchants)):
        return "charge"
    return intent


def provisional(question: str) -> tuple[Intent, bool]:
    """The intent as far as the question alone decides it, and whether it could still change with
    the statement's labels: from the charge rule on, a question naming a merchant or fee is "charge"
    (so "What is City Gym?" is, and "Why is my bill higher? City Gym?" too)."""
    text = question.lower()
    past_charge = False
    for intent, pattern in _RULES:
        past_charge = past_charge or intent == "charge"
        if pattern.search(text):
            return intent, past_charge and intent != "charge"
    return "out_of_scope", True


def label_keys(labels: Iterable[str]) -> list[str]:
    """The labels as a question is searched for them: lowercase, the empty ones left out."""
    return sorted({label.lower() for label in labels if label})


def mentioned(question: str, labels: Iterable[str]) -> set[str]:
    """The merchant or fee labels the question names."""
    text = question.lower()
    return {label for label in labels if len(label) >= 2 and label.lower() in text}
