"""Key-field errors in a raw model answer, by kind (app/eval/keyfields.py)."""

from __future__ import annotations

import pytest

from app.eval import golden
from app.eval.keyfields import key_field_errors

CASES = {c.id: c for c in golden.load()}
KNOWN = golden.merchants()
UNPAID_ZH = "G-CNY-1/2026-11-05/zh-CN/payment"  # 3,411.80 CNY, nothing paid yet
PAID_ZH = "G-CNY-1/2026-11-20/zh-CN/payment"
PARTIAL_EN = "G-USD-2/2026-11-20/en/payment"  # 15.00 of 512.15 USD paid; minimum 40.00
OVERDUE_NOTHING_EN = "G-USD-1/2026-11-30/en/payment"
LOWER_EN = "G-EUR-2/2026-11-05/en/bill_change"  # 463.60 EUR lower; drivers Air France, refunds, FreshMart...
HIGHER_EN = "G-EUR-1/2026-11-05/en/bill_change"  # 12.00 EUR higher, all of it City Gym; Netflix unchanged


def errors(case: str, text: str) -> list[tuple[str, str]]:
    c = CASES[case]
    return [(f.kind, f.detail) for f in key_field_errors(text, c.facts, c.intent, known=KNOWN)]


@pytest.mark.parametrize(
    ("case", "text", "expected"),
    [
        (UNPAID_ZH, "您的本期账单已还款。", [("status_flip", "payment_made (unpaid)")]),
        (UNPAID_ZH, "本期账单已全额还清。", [("status_flip", "paid_in_full (unpaid)")]),
        (UNPAID_ZH, "我们尚未收到您的还款，本期账单尚未还款，未逾期。", []),
        (PAID_ZH, "您的本期账单未还款。", [("status_flip", "unpaid (paid)")]),
        (PAID_ZH, "我们已收到您的还款3,411.80元，本期账单已全额还清。", []),
        (PARTIAL_EN, "Your statement is paid in full.", [("status_flip", "paid_in_full (partially_paid)")]),
        (PARTIAL_EN, "It is not paid in full yet: part of your balance is partially paid.", []),
        (OVERDUE_NOTHING_EN, "You have already paid, it is overdue.", [("status_flip", "payment_made (overdue)")]),
        (OVERDUE_NOTHING_EN, "We have not received a payment and the bill is overdue.", []),
        (HIGHER_EN, "Your bill is not overdue.", []),
        (HIGHER_EN, "Your bill is overdue.", [("status_flip", "overdue (unpaid)")]),
    ],
)
def test_status_flips(case: str, text: str, expected: list[tuple[str, str]]) -> None:
    assert errors(case, text) == expected


def test_amounts_that_are_no_fact_or_not_the_fact_they_follow() -> None:
    assert errors(PARTIAL_EN, "You owe 512.15 USD; the minimum payment of 40.00 USD is due on 25 November 2026.") == []
    assert errors(PARTIAL_EN, "You owe 512.51 USD.") == [("wrong_amount", "512.51")]
    assert errors(PARTIAL_EN, "The minimum payment of 15.00 USD is due.") == [("wrong_amount", "minimum_due=15.00")]
    assert errors(PARTIAL_EN, "Your new balance is 497.15 USD.") == [("wrong_amount", "new_balance=497.15")]
    assert errors(UNPAID_ZH, "本期账单3,411.80元，比上月增加了2,425.30元。") == []
    assert errors(UNPAID_ZH, "本期账单986.50元。") == [("wrong_amount", "new_balance=986.50")]
    assert errors(UNPAID_ZH, "最低还款额100.00元，到期日为2026年11月25日。") == []  # dates are not amounts


def test_the_direction_of_the_change() -> None:
    assert errors(LOWER_EN, "Your bill went down by 463.60 EUR.") == []
    assert errors(LOWER_EN, "Your bill increased by 463.60 EUR.") == [("wrong_direction", "increased")]
    assert errors(HIGHER_EN, "Your balance is lower than last month.") == [("wrong_direction", "lower")]
    assert errors(UNPAID_ZH, "您的账单比上月减少了。") == [("wrong_direction", "比上月减少")]
    assert errors(UNPAID_ZH, "您的账单比上月增加了。") == []
    assert errors(UNPAID_ZH, "您的账单比上期账单的986.50元多2,425.30元。") == []
    assert errors("G-EUR-3/2026-11-29/zh-CN/bill_change", "您的账单新余额为85.34欧元，比上月多174.66欧元。") == [
        ("wrong_direction", "比上月多")
    ]


def test_drivers_named_must_be_drivers() -> None:
    assert errors(HIGHER_EN, "The bill is higher because of City Gym.") == []
    assert errors(HIGHER_EN, "The bill is higher because of Netflix.") == [("wrong_driver", "Netflix")]
    assert errors(HIGHER_EN, "The bill is higher because of Delta.") == [("wrong_driver", "Delta")]
    # The labels of other statements (`ab` knows every facts' labels) may hold an empty one.
    c = CASES[HIGHER_EN]
    text = "The largest change is balance carried over after your payments."
    assert key_field_errors(text, c.facts, c.intent, known={"", *KNOWN}) == []
    # For a question about a charge, any transaction on the statement may be named.
    assert errors("G-EUR-1/2026-11-05/en/charge", "Netflix and City Gym are on this statement.") == []
