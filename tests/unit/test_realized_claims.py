"""What the customer reads for each claim of a plan (app/answers/realize.py), property-based.

Over generated account histories (tests/generated_facts.py: one or two statements, purchases at a
handful of merchants, fees, interest, refunds, payments before and after closing, every payment
status), every claim PlanCheck accepts for the facts, with every valid index, both wordings and
each kind of claim said before it, in both locales:
- the realizer says it: no reason (the sentence validator, its second line, agrees with the plan check);
- the text states the facts' values exactly (formatting.money / formatting.day / the status phrase);
- direction words agree with the sign of what they describe;
- the whole English answer has no key-field errors by the eval's own extractor (app/eval/keyfields.py).
"""

from __future__ import annotations

import random
import re
from datetime import date
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app import locales
from app.answers.realize import Realizer, SlotValues
from app.domain.claims import (
    Change,
    Claim,
    DriverClaim,
    FeesInterest,
    MinimumDue,
    NewBalance,
    NextStep,
    NoAnswer,
    NothingMore,
    PaidSinceClose,
    PaymentStatusClaim,
    PeriodClaim,
    StillToPay,
    Transaction,
    sign_word,
)
from app.domain.facts import BillFacts, compute_facts
from app.domain.plan import PlanCheck, fee_items, ordered
from app.domain.records import Line
from app.domain.slots import MAX_DRIVERS, items
from app.domain.vocabulary import Intent, Locale
from app.eval.keyfields import key_field_errors
from app.locales import JOINERS
from app.prompts import phrases
from tests.generated_facts import KNOWN, PLAN_INTENTS, accepted_alone, random_facts
from tests.histories import GYM, OCT, SEP, history

D = Decimal
LOCALES: tuple[Locale, ...] = ("en", "zh-CN")
PROPERTY = settings(
    max_examples=30,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
facts_of_histories = st.randoms(use_true_random=False).map(random_facts)

UP = {"en": re.compile(r"\b(?:higher|went up|up by|more than)\b"), "zh-CN": re.compile("增加|上升")}
DOWN = {"en": re.compile(r"\b(?:lower|went down|down by|less than)\b"), "zh-CN": re.compile("减少|下降")}
SAME = {"en": re.compile(r"\b(?:the same|unchanged)\b"), "zh-CN": re.compile("相同|持平")}


def accepted(facts: BillFacts) -> list[Claim]:
    """Every claim PlanCheck accepts for these facts under some intent (each on its own): every valid
    driver and transaction number, every argument the facts bear out, both wordings."""
    found: list[Claim] = []
    for intent in PLAN_INTENTS:
        found += [c for c in accepted_alone(facts, intent) if c not in found]
    return found


def befores(facts: BillFacts) -> list[Claim | None]:
    """What may be said before a claim: nothing, a driver, the change (the wordings join up to them)."""
    driver = DriverClaim(n=1, direction="up" if facts.drivers and facts.drivers[0].amount > 0 else "down")
    change = Change(direction="up" if facts.difference > 0 else "down" if facts.difference < 0 else "same")
    return [None, driver, change]


def money(amount: Decimal, facts: BillFacts, locale: Locale) -> str:
    """An amount as a figure (its sign is in the words around it)."""
    return locales.money(abs(amount), facts.currency, locale)


def balance(amount: Decimal, facts: BillFacts, locale: Locale) -> str:
    """A balance as a figure with its sign: a balance in credit is negative."""
    return locales.money(amount, facts.currency, locale)


def states(text: str, value: str) -> bool:
    """The text has this figure or date, not as the tail of a longer one (12.00 in 112.00)."""
    return re.search(rf"(?<![\d.,]){re.escape(value)}(?!\d)", text) is not None


def expected(claim: Claim, facts: BillFacts, locale: Locale) -> list[str]:
    """What the customer must read for this claim: the facts' values, written for the locale."""
    s, p = facts.statement, facts.payment
    values = SlotValues(facts, locale)

    def day(value: date) -> str:
        return locales.day(value, locale)

    if isinstance(claim, NewBalance):
        return [balance(s.new_balance, facts, locale)]
    if isinstance(claim, Change):
        if facts.previous is None:  # a first statement: against the opening balance
            return [balance(s.new_balance, facts, locale), balance(facts.previous_balance, facts, locale)]
        if claim.direction == "same":
            return [balance(s.new_balance, facts, locale)]
        shown = [money(facts.difference, facts, locale), balance(s.new_balance, facts, locale)]
        return shown + ([balance(facts.previous_balance, facts, locale)] if claim.wording == 1 else [])
    if isinstance(claim, DriverClaim):
        driver = facts.drivers[claim.n - 1]
        [phrase], _ = phrases([driver], p.status, locale)
        return [phrase, money(driver.amount, facts, locale)]
    if isinstance(claim, Transaction):
        entry = items(facts)[claim.n - 1]
        return [values[f"item_{claim.n}"], entry.label, money(entry.amount, facts, locale), day(entry.posted_on)]
    if isinstance(claim, FeesInterest):
        fees = [(n, items(facts)[n - 1]) for n in fee_items(facts)]
        return [v for n, e in fees for v in (values[f"item_{n}"], money(e.amount, facts, locale), day(e.posted_on))]
    if isinstance(claim, PaymentStatusClaim):
        _, status = phrases([], p.status, locale)
        return [status, values["status"]]
    if isinstance(claim, PaidSinceClose):
        got = facts.payments_received
        if not got:
            return []
        last = [money(got[-1].amount, facts, locale), day(got[-1].posted_on)]
        return last if len(got) == 1 else [money(p.paid_amount, facts, locale), *last]
    if isinstance(claim, StillToPay):
        return [money(p.outstanding, facts, locale)]
    if isinstance(claim, MinimumDue):
        return [money(s.minimum_due, facts, locale), day(s.due_date)]
    if isinstance(claim, PeriodClaim):
        return [day(s.period_start), day(s.period_end)]
    assert isinstance(claim, NextStep | NoAnswer | NothingMore), claim
    return []


def direction_of(claim: Claim, facts: BillFacts) -> str | None:
    """The direction the claim's text must state: the sign of what it describes; None: it states none."""
    if isinstance(claim, Change) and facts.previous is not None:
        return claim.direction
    if isinstance(claim, DriverClaim):
        return "up" if facts.drivers[claim.n - 1].amount > 0 else "down"
    return None


def said(facts: BillFacts, locale: Locale, claim: Claim, prev: Claim | None) -> str:
    text, reason = Realizer(facts, locale).say(claim, prev)
    assert reason is None, f"{claim} after {prev} ({locale}) refused by the sentence check: {reason}"
    return text


@PROPERTY
@given(facts_of_histories)
def test_every_accepted_claim_is_said_in_both_locales_without_a_reason(facts: BillFacts) -> None:
    claims = accepted(facts)
    assert claims, "the facts accept no claim at all"
    for locale in LOCALES:
        for claim in claims:
            for prev in befores(facts):
                text = said(facts, locale, claim, prev)
                assert text.strip(), f"{claim} after {prev} ({locale}) says nothing"
                if prev is not None:
                    assert text.startswith(JOINERS[locale]), "a claim said after another is joined to it"


@PROPERTY
@given(facts_of_histories)
def test_every_accepted_claim_states_the_facts_values_exactly(facts: BillFacts) -> None:
    for locale in LOCALES:
        for claim in accepted(facts):
            text = said(facts, locale, claim, None)
            for value in expected(claim, facts, locale):
                assert states(text, value), f"{claim} ({locale}) does not state {value!r}: {text!r}"
            if not expected(claim, facts, locale):
                assert not re.search(r"\d", text), f"{claim} ({locale}) states a figure no fact asks for: {text!r}"


@PROPERTY
@given(facts_of_histories)
def test_direction_words_agree_with_the_sign_of_the_change_or_driver(facts: BillFacts) -> None:
    for locale in LOCALES:
        for claim in accepted(facts):
            text = said(facts, locale, claim, None)
            direction = direction_of(claim, facts)
            up, down, same = (bool(w[locale].search(text)) for w in (UP, DOWN, SAME))
            if direction == "up":
                assert up, f"{claim} ({locale}): the amount went up, the text says {text!r}"
                assert not down, f"{claim} ({locale}): the amount went up, the text says {text!r}"
            elif direction == "down":
                assert down, f"{claim} ({locale}): the amount went down, the text says {text!r}"
                assert not up, f"{claim} ({locale}): the amount went down, the text says {text!r}"
            else:
                assert not up, f"{claim} ({locale}) states a direction: {text!r}"
                assert not down, f"{claim} ({locale}) states a direction: {text!r}"
                if isinstance(claim, Change) and facts.previous is not None:
                    assert same, f"{claim} ({locale}): the bill did not change, the text says {text!r}"


@PROPERTY
@given(facts_of_histories)
def test_the_minimum_payment_is_due_or_was_due_as_the_due_date_has_passed(facts: BillFacts) -> None:
    for claim in accepted(facts):
        if isinstance(claim, MinimumDue):
            text = said(facts, "en", claim, None)
            past = facts.as_of > facts.statement.due_date
            assert ("was due" in text) == past, f"as of {facts.as_of}, due {facts.statement.due_date}: {text!r}"


def answer(facts: BillFacts, intent: Intent, claims: list[Claim]) -> str:
    """The English answer a plan of these claims reads as: accepted in turn, said in `ordered` order."""
    check = PlanCheck(facts, intent)
    plan = [c for c in claims if check.check(c) is None]
    realizer, shown, prev = Realizer(facts, "en"), [], None
    for claim in ordered(plan, intent):
        text, reason = realizer.say(claim, prev)
        assert reason is None, f"{claim}: {reason}"
        shown.append(text)
        prev = claim
    return "".join(shown)


@PROPERTY
@given(facts_of_histories)
def test_english_answers_of_every_accepted_claim_have_no_key_field_errors(facts: BillFacts) -> None:
    for intent in PLAN_INTENTS:
        text = answer(facts, intent, accepted_alone(facts, intent))
        found = key_field_errors(text, facts, intent, known=KNOWN)
        assert found == [], f"{intent}: {found} in {text!r}"


SEEDS = range(100)


def test_the_generated_facts_cover_every_status_direction_and_claim_type() -> None:
    statuses, directions, kinds = set(), set(), set()
    for seed in SEEDS:
        facts = random_facts(random.Random(seed))
        statuses.add(facts.payment.status)
        directions.add((facts.previous is None, sign_word(facts.difference)))
        kinds |= {type(c) for c in accepted(facts)}
        assert len(facts.drivers) <= MAX_DRIVERS or len(accepted_alone(facts, "bill_change")) > 0
    assert statuses == {"paid", "partially_paid", "unpaid", "overdue"}
    assert {(False, "up"), (False, "down"), (False, "same"), (True, "up")} <= directions
    assert len(kinds) == 12, kinds


@pytest.mark.parametrize("locale", LOCALES)
def test_a_credit_balance_is_said_as_a_credit_not_as_a_debt(locale: Locale) -> None:
    """Payments beyond the charges leave the bank owing the customer: the new balance is negative."""
    lines = [*GYM, Line(posted_on=date(2026, 10, 20), kind="payment", amount=D("200.00"))]
    facts = compute_facts(history(lines, [SEP, OCT]), as_of=date(2026, 11, 10))
    assert facts.statement.new_balance == D("-75.01")
    signed = locales.money(facts.statement.new_balance, facts.currency, locale)  # "-75.01 EUR"
    for claim in (NewBalance(), Change(direction="down")):
        text = said(facts, locale, claim, None)
        assert states(text, signed), f"{claim} ({locale}): the customer reads {text!r}, the balance is {signed}"
