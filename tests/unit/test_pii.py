"""Exported questions lose personal data and keep what a bill question needs (app/replay/pii.py)."""

from __future__ import annotations

import pytest

from app.replay.pii import mask


@pytest.mark.parametrize(
    ("question", "masked"),
    [
        # e-mail addresses
        ("Send it to ann.lee+bank@example.co.uk please", "Send it to <email> please"),
        # card numbers (Luhn), with or without groups
        ("Why was 4111 1111 1111 1111 charged twice?", "Why was <card> charged twice?"),
        ("card 5500-0000-0000-0004 declined", "card <card> declined"),
        ("我的卡号4111111111111111为什么扣款", "我的卡号<card>为什么扣款"),
        # account numbers: IBAN, long digit runs that are no card
        ("Payment from DE89 3704 0044 0532 0130 00 missing", "Payment from <account> missing"),
        ("account 12345678 shows a fee", "account <account> shows a fee"),
        ("ref 1234 5678 9012 3456 is wrong", "ref <account> is wrong"),
        # phone numbers
        ("call me on +44 20 7946 0958", "call me on <phone>"),
        ("my number is 555-123-4567", "my number is <phone>"),
        ("请打13812345678联系我", "请打<phone>联系我"),
        ("text +4915112345678", "text <phone>"),
        # names the customer introduces
        ("Hi, my name is John Smith, why is my bill higher?", "Hi, my name is <name>, why is my bill higher?"),
        ("I'm Maria, what is this charge?", "I'm <name>, what is this charge?"),
        ("我叫张伟，为什么这个月账单多了？", "我叫<name>，为什么这个月账单多了？"),
    ],
)
def test_each_kind_of_personal_data_is_replaced(question: str, masked: str) -> None:
    assert mask(question) == masked


def test_the_customers_own_name_is_masked_wherever_it_appears() -> None:
    assert (
        mask("ann lee here. Is Ann's payment in? LEE", names=["Ann Lee"])
        == "<name> here. Is <name>'s payment in? <name>"
    )
    assert mask("王芳的还款到账了吗", names=["王芳"]) == "<name>的还款到账了吗"


@pytest.mark.parametrize(
    "question",
    [
        "Why is my bill 12.00 higher than last month?",
        "what is the 12 euro payment to city gym",
        "Did my payment of 1,250.00 on 2026-11-10 arrive?",
        "Why was I charged interest of 123456.78?",
        "What is the 4.99 charge from Cloud Storage Co?",
        "为什么这个月账单多了 12.00？",
        "I am not sure why my bill went up",
        "最晚哪天还",
    ],
)
def test_what_a_bill_question_needs_stays(question: str) -> None:
    assert mask(question, names=["Ann Lee"]) == question


def test_an_address_with_the_customers_name_is_an_address() -> None:
    assert mask("mail ann.lee@example.com", names=["Ann Lee"]) == "mail <email>"
