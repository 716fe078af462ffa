"""Intent classification without a model, in English and Chinese."""

from __future__ import annotations

import pytest

from app.domain.intents import CANONICAL_QUESTIONS, classify, mentioned


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        ("Why is my bill 12.00 higher than last month?", "bill_change"),
        ("Why did my statement balance go down?", "bill_change"),
        ("What is this charge?", "charge"),
        ("What is City Gym?", "charge"),
        ("Why was I charged interest?", "fees_interest"),
        ("What is this late fee?", "fees_interest"),
        ("Did my payment arrive?", "payment"),
        ("When is my bill due?", "payment"),
        ("What's the weather tomorrow?", "out_of_scope"),
        ("Please increase my credit limit", "out_of_scope"),
        ("为什么这个月账单多了12元？", "bill_change"),
        ("这笔消费是什么？", "charge"),
        ("为什么收我利息？", "fees_interest"),
        ("为什么有手续费？", "fees_interest"),
        ("我的还款到账了吗？", "payment"),
        ("今天天气怎么样", "out_of_scope"),
    ],
)
def test_classify(question: str, intent: str) -> None:
    assert classify(question, ["City Gym", "FreshMart"]) == intent


def test_mentioned_labels() -> None:
    assert mentioned("what is the city gym charge?", ["City Gym", "Netflix", "X"]) == {"City Gym"}


def test_each_canonical_question_is_classified_to_its_intent() -> None:
    """A cached canonical answer is served only to questions of its intent: its own question must be one."""
    for intent, questions in CANONICAL_QUESTIONS.items():
        for locale, question in questions.items():
            assert classify(question) == intent, (locale, question)
    assert set(CANONICAL_QUESTIONS) == {"bill_change", "fees_interest", "payment"}
