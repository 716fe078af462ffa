"""The golden set shipped with the package: fixed accounts in the import format and the questions
asked about them (`golden.json`), with the expected facts computed by the domain code itself.

Each account has two statements (September and October 2026, the latter due 25 November); the
payments posted after October closes and each case's as-of date make the payment status paid,
partially paid, unpaid or overdue. No database is needed: an account becomes the `AccountHistory`
the database would return, and `compute_facts` does the rest.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from pathlib import Path

import msgspec

from app.data.import_format import AccountIn
from app.domain.facts import BillFacts, PaymentStatus, compute_facts
from app.domain.intents import classify
from app.domain.money import ZERO, signed
from app.domain.records import AccountHistory, Line, Period
from app.domain.vocabulary import Intent, Locale

GOLDEN_PATH = Path(__file__).with_name("golden.json")


class CaseIn(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    id: str
    account: str
    question: str
    locale: Locale
    as_of: date
    intent: Intent  # what the question is meant to be: the test checks that `classify` agrees
    status: PaymentStatus  # the payment status the as-of date is chosen for: checked the same way


class DialogueIn(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A conversation about one statement: each turn a follow-up of the turns before (or a two-part
    question), answered with what they said (app/eval/dialogues.py)."""

    id: str
    account: str
    locale: Locale
    as_of: date
    turns: list[str]


class GoldenFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    accounts: list[AccountIn]
    cases: list[CaseIn]
    dialogues: list[DialogueIn] = []


class GoldenCase(msgspec.Struct, frozen=True, kw_only=True):
    """A case ready to run: the question, and the facts and intent the service would compute."""

    id: str
    question: str
    locale: Locale
    intent: Intent
    facts: BillFacts


def history(account: AccountIn, locale: Locale) -> AccountHistory:
    """An import-format account as the history the database would return for it."""
    lines = [
        Line(
            posted_on=t.posted_on, kind=t.kind, amount=Decimal(t.amount), merchant=t.merchant, description=t.description
        )
        for t in account.transactions
    ]
    periods = []
    for i, s in enumerate(account.statements, start=1):
        net = sum((signed(x.kind, x.amount) for x in lines if s.period_start <= x.posted_on <= s.period_end), ZERO)
        periods.append(
            Period(
                id=i,
                period_start=s.period_start,
                period_end=s.period_end,
                due_date=s.due_date,
                minimum_due=Decimal(s.minimum_due),
                net=net,
            )
        )
    return AccountHistory(
        account_id=0,
        account_ref=account.ref,
        currency=account.currency,
        opening_balance=Decimal(account.opening_balance),
        customer_ref="C-GOLDEN",
        customer_locale=locale,
        statements=periods,
        lines=lines,
    )


def load_file(path: Path = GOLDEN_PATH) -> GoldenFile:
    return msgspec.json.decode(path.read_bytes(), type=GoldenFile)


def load(path: Path = GOLDEN_PATH, limit: int | None = None) -> list[GoldenCase]:
    """The golden cases (the first `limit` of them), each with its facts and intent."""
    golden = load_file(path)
    accounts = {a.ref: a for a in golden.accounts}
    cases = []
    for case in golden.cases[:limit]:
        facts = compute_facts(history(accounts[case.account], case.locale), case.as_of)
        intent = classify(case.question, facts.labels)
        cases.append(GoldenCase(id=case.id, question=case.question, locale=case.locale, intent=intent, facts=facts))
    return cases


class GoldenDialogue(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    locale: Locale
    facts: BillFacts
    turns: list[str]


def load_dialogues(path: Path = GOLDEN_PATH) -> list[GoldenDialogue]:
    golden = load_file(path)
    accounts = {a.ref: a for a in golden.accounts}
    return [
        GoldenDialogue(
            id=d.id,
            locale=d.locale,
            facts=compute_facts(history(accounts[d.account], d.locale), d.as_of),
            turns=d.turns,
        )
        for d in golden.dialogues
    ]


def merchants(path: Path = GOLDEN_PATH) -> set[str]:
    """Every merchant and fee label in the golden accounts: the names a wrong-driver check looks for."""
    return {
        label.strip()
        for a in load_file(path).accounts
        for t in a.transactions
        for label in (t.merchant, t.description if t.kind == "fee" else None)
        if label and label.strip()
    }
