"""Every validator rule, with accepted and rejected examples in both languages."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from app.domain.facts import BillFacts, compute_facts
from app.domain.records import Line
from app.domain.validation import validate
from tests.histories import GYM, OCT, SEP, history

D = Decimal


def facts(currency: str = "EUR", as_of: date = date(2026, 11, 10), extra: list[Line] | None = None) -> BillFacts:
    # new balance 124.99, previous 112.99, +12.00 (City Gym), minimum 25.00 due 25 November 2026
    return compute_facts(history(GYM + (extra or []), [SEP, OCT], currency=currency), as_of=as_of)


UNPAID = facts()
CNY = facts("CNY")
PAID = facts(extra=[Line(posted_on=date(2026, 11, 5), kind="payment", amount=D("124.99"))])
PARTIAL = facts(extra=[Line(posted_on=date(2026, 11, 5), kind="payment", amount=D("50.00"))])
OVERDUE = facts(as_of=date(2026, 11, 30))


@pytest.mark.parametrize(
    "text",
    [
        "Your new balance is 124.99 EUR, 12.00 EUR more than last month, because of City Gym.",
        "Your bill went up by 12 EUR: a new City Gym membership of €12.00.",
        "The minimum payment of 25.00 EUR is due on 25 November 2026.",
        "The minimum payment is due on November 25, 2026; your balance is EUR 124.99.",
        "Your statement for 2026-10-01 to 2026-10-31 is not paid yet.",
        "Your balance of 124.99 has not been paid yet.",
    ],
)
def test_english_answers_that_state_only_facts_pass(text: str) -> None:
    assert validate(text, UNPAID, "en").ok, validate(text, UNPAID, "en")


@pytest.mark.parametrize(
    "text",
    [
        "您本期新余额为124.99元，比上月多12元，主要是City Gym的消费。",
        "最低还款额¥25.00，到期日为2026年11月25日，目前尚未还款。",
        "本期账单比上期多12.00元（新增City Gym消费12元）。到期日11月25日。",
    ],
)
def test_chinese_answers_that_state_only_facts_pass(text: str) -> None:
    assert validate(text, CNY, "zh-CN").ok, validate(text, CNY, "zh-CN")


@pytest.mark.parametrize(
    ("text", "locale", "rule"),
    [
        ("Your bill is 13.00 EUR higher because of City Gym.", "en", "unknown_amount"),  # invented amount
        ("You were charged 12.50 for the gym.", "en", "unknown_amount"),
        ("Your balance is 1,124.99 EUR.", "en", "unknown_amount"),
        ("您的账单多了13元。", "zh-CN", "unknown_amount"),
        ("The minimum payment is due on 26 November 2026.", "en", "unknown_date"),
        ("Please pay by 2026-12-01.", "en", "unknown_date"),
        ("最低还款额的到期日为2026年12月25日。", "zh-CN", "unknown_date"),
        ("Interest is charged at 1.8% a month.", "en", "unknown_percentage"),
        ("利息按百分之18计算。", "zh-CN", "unknown_percentage"),
        ("Your statement is paid in full.", "en", "status_contradiction"),  # it is unpaid
        ("您的账单已还清。", "zh-CN", "status_contradiction"),
        ("Your payment is overdue.", "en", "status_contradiction"),
        ("Your payment was declined by the bank.", "en", "status_contradiction"),
        ("您的还款处理失败。", "zh-CN", "status_contradiction"),
        ("", "en", "empty"),
        ("   ", "zh-CN", "empty"),
        ("Your bill is higher. " * 60, "en", "too_long"),
        ("您的账单比上月高，主要是健身房消费。", "en", "wrong_language"),
        ("Your bill is higher because of the gym.", "zh-CN", "wrong_language"),
    ],
)
def test_answers_that_break_a_rule_are_refused(text: str, locale: str, rule: str) -> None:
    verdict = validate(text, CNY if locale == "zh-CN" else UNPAID, locale)
    assert not verdict.ok
    assert verdict.rule == rule, verdict


def test_paid_and_unpaid_swapped_is_refused_both_ways() -> None:
    assert validate("Your statement is paid in full.", PAID, "en").ok
    assert not validate("Your statement is paid in full.", UNPAID, "en").ok
    assert validate("We have not received your payment yet.", UNPAID, "en").ok
    assert validate("We have not received your payment yet.", PAID, "en").rule == "status_contradiction"
    paid_cny = facts("CNY", extra=[Line(posted_on=date(2026, 11, 5), kind="payment", amount=D("124.99"))])
    assert validate("您本期账单已还清，共还款124.99元。", paid_cny, "zh-CN").ok
    assert validate("您尚未还款。", paid_cny, "zh-CN").rule == "status_contradiction"


def test_partial_and_overdue_statuses() -> None:
    assert validate("We have received 50.00 EUR; 74.99 EUR is still outstanding.", PARTIAL, "en").ok
    assert validate("Your statement is not paid in full yet: 74.99 EUR remaining.", PARTIAL, "en").ok
    assert validate("Your statement is paid in full.", PARTIAL, "en").rule == "status_contradiction"
    assert validate("Your payment of 25.00 EUR is overdue since 25 November 2026.", OVERDUE, "en").ok
    assert validate("Your statement has not been paid and is overdue.", OVERDUE, "en").ok
    assert validate("Your statement is partially paid.", OVERDUE, "en").rule == "status_contradiction"
