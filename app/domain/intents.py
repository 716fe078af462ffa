"""What the customer asks about, decided without a model (each locale's lexicon.json, app/domain/lexicon.py).

Requests nobody here may serve (a credit limit, a loan) are recognised first; then specific
intents are checked before the general one: "why was I charged interest?" is about fees
and interest, not about an unknown charge; "why is my bill higher?" is a bill change.
"""

from __future__ import annotations

from collections.abc import Iterable

from app.domain.money import ZERO
from app.domain.understanding import Line, understand
from app.domain.vocabulary import Intent


def classify(question: str, merchants: Iterable[str] = ()) -> Intent:
    """The intent of a first question about a statement with these labels (app/domain/understanding.py)."""
    return understand(question, [Line(label, "purchase", ZERO) for label in merchants]).intent


def provisional(question: str) -> tuple[Intent, bool]:
    """The intent as far as the question alone decides it, and whether it could still change with
    the statement's labels: a question that names a line and asks nothing more specific than a bill
    change is about that line (so "What is City Gym?" is a charge, and "Why is my bill higher? City
    Gym?" too)."""
    reading = understand(question, ())
    return reading.intent, reading.intent == "bill_change" or not reading.certain


def label_keys(labels: Iterable[str]) -> list[str]:
    """The labels as a question is searched for them: lowercase, the empty ones left out."""
    return sorted({label.lower() for label in labels if label})


def mentioned(question: str, labels: Iterable[str]) -> set[str]:
    """The merchant or fee labels the question names."""
    text = question.lower()
    return {label for label in labels if len(label) >= 2 and label.lower() in text}
