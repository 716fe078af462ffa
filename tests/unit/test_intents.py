"""Intent classification without a model, in English and Chinese."""

from __future__ import annotations

import pytest

from app.domain.intents import classify, label_keys, mentioned, provisional
from app.locales import CANONICAL_QUESTIONS


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


@pytest.mark.parametrize(
    ("question", "decided", "naming_a_label"),
    [
        ("Did my payment arrive? City Gym?", "payment", "payment"),  # decided before the labels
        ("Why was I charged interest by City Gym?", "fees_interest", "fees_interest"),
        ("What is this charge?", "charge", "charge"),
        ("Please increase my credit limit at City Gym", "out_of_scope", "out_of_scope"),
        ("Why is my bill higher? Is it City Gym?", "bill_change", "charge"),  # the labels decide
        ("Tell me about City Gym", "out_of_scope", "charge"),
        ("为什么这个月账单多了？是健身房吗？", "bill_change", "charge"),
    ],
)
def test_provisional_says_when_the_labels_can_still_change_the_intent(
    question: str, decided: str, naming_a_label: str
) -> None:
    """The answer cache is looked up before the statement's labels are read (app/data/history.py)."""
    intent, labels_matter = provisional(question)
    assert (intent, labels_matter) == (decided, decided != naming_a_label)
    assert classify(question) == decided
    assert classify(question, ["City Gym", "健身房"]) == naming_a_label


def test_label_keys_are_lowercase_distinct_and_never_empty() -> None:
    assert label_keys(["City Gym", "city gym", "", "Late fee"]) == ["city gym", "late fee"]


def test_mentioned_labels() -> None:
    assert mentioned("what is the city gym charge?", ["City Gym", "Netflix", "X"]) == {"City Gym"}


def test_each_canonical_question_is_classified_to_its_intent() -> None:
    """A cached canonical answer is served only to questions of its intent: its own question must be one."""
    for intent, questions in CANONICAL_QUESTIONS.items():
        for locale, question in questions.items():
            assert classify(question) == intent, (locale, question)
    assert set(CANONICAL_QUESTIONS) == {"bill_change", "fees_interest", "payment"}
