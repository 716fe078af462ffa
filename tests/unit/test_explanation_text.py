"""The deterministic explanation: every number it prints is a fact, in both languages."""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal
from typing import Any

import pytest

from app import locales
from app.answers.realize import Realizer
from app.domain.claims import NextStep
from app.domain.facts import BillFacts, compute_facts
from app.domain.policy import TenantPolicy
from app.domain.records import Line
from app.prompts import change
from app.prompts import render_fallback as render
from tests.histories import OCT, SEP, history

D = Decimal


def render_fallback(facts: BillFacts, locale: str) -> str:
    return render("bill_change", facts, locale, policy=TenantPolicy(brand="Northbridge Bank"))


LINES = [
    Line(posted_on=date(2026, 9, 3), kind="purchase", amount=D("1100.00"), merchant="FreshMart"),
    Line(posted_on=date(2026, 10, 3), kind="purchase", amount=D("1100.00"), merchant="FreshMart"),
    Line(posted_on=date(2026, 10, 4), kind="payment", amount=D("1100.00")),
    Line(posted_on=date(2026, 10, 12), kind="purchase", amount=D("12.00"), merchant="City Gym"),
    Line(
        posted_on=date(2026, 10, 20), kind="fee", amount=D("3.00"), merchant=None, description="Foreign transaction fee"
    ),
    Line(posted_on=date(2026, 10, 21), kind="refund", amount=D("1.25"), merchant="FreshMart"),
    Line(posted_on=date(2026, 10, 22), kind="interest", amount=D("0.75")),
    Line(posted_on=date(2026, 11, 5), kind="payment", amount=D("30.00")),
]


def test_money_and_dates_per_locale() -> None:
    assert locales.money(D("1234.5"), "EUR", "en") == "1,234.50 EUR"
    assert locales.money(D("-3"), "EUR", "en", sign=True) == "-3.00 EUR"
    assert locales.money(D("12"), "CNY", "zh-CN", sign=True) == "+12.00元"
    assert locales.money(D("12"), "EUR", "zh-CN") == "12.00欧元"
    assert locales.money(D("12"), "CHF", "zh-CN") == "12.00 CHF"
    assert locales.day(date(2026, 11, 25), "en") == "25 November 2026"
    assert locales.day(date(2026, 11, 25), "zh-CN") == "2026年11月25日"


@pytest.mark.parametrize("locale", ["en", "zh-CN"])
def test_every_amount_in_the_text_is_a_fact(locale: str) -> None:
    facts = compute_facts(history(LINES, [SEP, OCT]), as_of=date(2026, 11, 10))
    text = render_fallback(facts, locale)
    allowed = {
        facts.statement.new_balance, facts.previous_balance, facts.difference, abs(facts.difference),
        facts.statement.minimum_due, facts.payment.paid_amount, facts.payment.outstanding,
        *(abs(d.amount) for d in facts.drivers),
    }  # fmt: skip
    mentioned = {D(m.replace(",", "")) for m in re.findall(r"\d[\d,]*\.\d\d", text)}
    assert mentioned, text
    assert mentioned <= allowed, (mentioned - allowed, text)
    assert "1,114.50" in text  # grouping separators in both languages


def test_english_text_names_the_change_the_drivers_and_the_due_date() -> None:
    facts = compute_facts(history(LINES, [SEP, OCT]), as_of=date(2026, 11, 10))
    text = render_fallback(facts, "en")
    assert "new balance of 1,114.50 EUR" in text
    assert "14.50 EUR more than the 1,100.00 EUR" in text
    assert "purchases at “City Gym” (+12.00 EUR)" in text
    assert "fee: “Foreign transaction fee” (+3.00 EUR)" in text
    assert "; and other smaller changes." in text
    assert "We have received 30.00 EUR so far; 1,084.50 EUR is still outstanding" in text
    assert "due on 25 November 2026" in text


def test_chinese_text_uses_chinese_amounts_dates_and_status() -> None:
    facts = compute_facts(history(LINES[:-1], [SEP, OCT], currency="CNY"), as_of=date(2026, 11, 26))
    text = render_fallback(facts, "zh-CN")
    assert "新余额为1,114.50元" in text
    assert "多14.50元" in text
    assert "在“City Gym”的消费（+12.00元）" in text
    assert "最低还款额25.00元已于2026年11月25日到期" in text
    assert "已逾期" in text
    assert " " not in text.replace("City Gym", "").replace("Foreign transaction fee", "")


@pytest.mark.parametrize(
    ("as_of", "en", "zh"),
    [
        (date(2026, 11, 1), "We have not received a payment", "尚未收到"),
        (date(2026, 11, 10), "still outstanding", "待还"),
        (date(2026, 12, 1), "still outstanding", "待还"),  # 30.00 paid covers the 25.00 minimum: not overdue
    ],
)
def test_payment_sentence_follows_the_status(as_of: date, en: str, zh: str) -> None:
    facts = compute_facts(history(LINES, [SEP, OCT]), as_of=as_of)
    assert en in render_fallback(facts, "en")
    assert zh in render_fallback(facts, "zh-CN")


def test_unknown_locale_is_refused() -> None:
    facts = compute_facts(history(LINES, [SEP, OCT]), as_of=date(2026, 11, 10))
    with pytest.raises(ValueError, match="locale"):
        render_fallback(facts, "fr")


def test_overdue_and_paid_sentences() -> None:
    unpaid = compute_facts(history(LINES[:-1], [SEP, OCT]), as_of=date(2026, 11, 26))
    assert unpaid.payment.status == "overdue"
    assert "the payment is overdue" in render_fallback(unpaid, "en")
    paid = compute_facts(
        history([*LINES, Line(posted_on=date(2026, 11, 6), kind="payment", amount=D("1084.50"))], [SEP, OCT]),
        as_of=date(2026, 11, 26),
    )
    assert paid.payment.status == "paid"
    assert "paid in full" in render_fallback(paid, "en")
    assert "已全额还清" in render_fallback(paid, "zh-CN")


@pytest.mark.parametrize("intent", ["bill_change", "charge", "fees_interest", "payment", "out_of_scope"])
@pytest.mark.parametrize("locale", ["en", "zh-CN"])
@pytest.mark.parametrize("as_of", [date(2026, 11, 1), date(2026, 11, 10), date(2026, 11, 30)])
def test_every_deterministic_answer_is_in_its_language_and_quotes_third_party_names(
    intent: Any, locale: str, as_of: date
) -> None:
    facts = compute_facts(history(LINES, [SEP, OCT], currency="CNY"), as_of=as_of)
    text = render(intent, facts, locale, policy=TenantPolicy(brand="Northbridge Bank"), focus={"City Gym"})
    cjk = len(re.findall(r"[\u3400-\u9fff]", text))
    latin = len(re.findall(r"[A-Za-z]", text.replace("City Gym", "").replace("FreshMart", "")))
    assert (cjk > latin) == (locale == "zh-CN"), text
    # A merchant's name is data: it appears only inside quotes, never as words of the answer.
    for name in ("City Gym", "FreshMart", "Foreign transaction fee"):
        assert name not in text.replace(f"“{name}”", ""), text


def test_charge_answer_names_the_charge_asked_about_or_the_largest() -> None:
    facts = compute_facts(history(LINES, [SEP, OCT]), as_of=date(2026, 11, 10))
    policy = TenantPolicy(brand="Northbridge Bank")
    named = render("charge", facts, "en", policy=policy, focus={"City Gym"})
    assert "On 12 October 2026 your statement shows a purchase at “City Gym” of 12.00 EUR." in named
    largest = render("charge", facts, "en", policy=policy)
    assert largest.startswith("The largest charges on your statement")
    assert "purchase at “FreshMart” on 3 October 2026 (1,100.00 EUR)" in largest
    fees = render("fees_interest", facts, "zh-CN", policy=policy)
    assert "费用：“Foreign transaction fee”（3.00欧元）" in fees
    assert "利息" in fees
    refusal = render("out_of_scope", facts, "en", policy=policy)
    assert "Northbridge Bank customer service" in refusal


def test_a_change_since_last_month_is_written_as_one() -> None:
    """Issue 35: "-64.38 EUR" beside "purchases at Corner Cafe" reads as a refund."""
    assert change(D("-64.38"), "EUR", "en") == "64.38 EUR less than last month"
    assert change(D("12"), "EUR", "en") == "12.00 EUR more than last month"
    assert change(D("0"), "EUR", "en") == "no change from last month"
    assert change(D("-64.38"), "CNY", "zh-CN") == "比上月少64.38元"


def test_only_the_chat_widgets_answers_point_at_the_chat() -> None:
    """The next step and the policy fallback say "here in the chat" only where there is one."""
    facts = compute_facts(history(LINES, [SEP, OCT]), as_of=date(2026, 11, 10))
    step = NextStep(action="agent", wording=1)
    for locale, chat_words in (("en", "here in the chat"), ("zh-CN", "在对话中")):
        assert chat_words in Realizer(facts, locale, chat=True).say(step, None)[0]
        assert chat_words not in Realizer(facts, locale).say(step, None)[0]
        policy = TenantPolicy(brand="Northbridge Bank")
        assert chat_words in render("policy", facts, locale, policy=policy, chat=True)
        assert chat_words not in render("policy", facts, locale, policy=policy)
