"""What a chat question asks, read without a model: its intent, the statement lines it is about, the
language it is written in, whether it needs the turns before it, and whether it asks for a person.

Rules are the fast path (well under a millisecond, docs/understanding.md); where they cannot decide
the intent, `certain` is False and the caller may ask the model to choose from the intent list.

- Intent: each clause is read on its own, signals in precedence order (app/domain/lexicon.py); the
  first clause asking something this assistant answers decides ("why is my bill higher and did my
  payment arrive" is a bill change). A question that names a line and asks nothing more specific
  than a bill change is about that line: a charge, or fees and interest for a fee or interest line.
- Follow-ups: with a context, a question that asks nothing itself ("And why?", "还有别的吗？") takes
  the context's intent and subjects; one that only names a line ("the gym one?") takes the context's
  conversation and its own subject; one that points back ("why was it charged twice?") keeps its own
  intent and takes the subjects when the intent is the same; "what about last month?" repeats the
  context's question about the statement before.
- Ambiguity: a mention that fits several lines equally well gives `choices`, never a guess.
- A request for a person is out of scope with `handover`; asking *about* a person ("are you a real
  person?") and complaining ("我要投诉") are not requests for one.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from app.domain import lexicon
from app.domain.subjects import Line, match
from app.domain.vocabulary import NEEDS, Intent, Locale, Need

__all__ = ["Context", "Line", "Reading", "asked", "language_of", "normalize", "understand"]

_KIND_INTENT: dict[str, Intent] = {"fee": "fees_interest", "interest": "fees_interest"}


@dataclass(frozen=True, slots=True)
class Context:
    """What the conversation's previous turns established; None for a first question."""

    intent: Intent  # the intent the previous answered turn was about
    subjects: tuple[str, ...]  # the statement labels it was about (may be empty)
    locale: Locale  # the language it was answered in


@dataclass(frozen=True, slots=True)
class Reading:
    intent: Intent
    subjects: tuple[str, ...]  # statement labels the question is about, its own or taken from the context
    language: Locale | None  # the language the question is written in; None when it does not say
    followup: bool  # the intent or the subjects were taken from the context, or it points back at it
    handover: bool  # the customer asks for a person
    choices: tuple[str, ...]  # two or more labels that fit equally well: ask back (subjects is then empty)
    certain: bool  # False: the rules could not decide the intent (the caller may ask the model)
    previous_period: bool = False  # "what about last month?": the same intent about the statement before
    # Every intent the question asks, in its order: `intent` first, then those of its further clauses
    # ("did my payment arrive, and why is my bill higher?": payment, bill_change).
    intents: tuple[Intent, ...] = ()
    needs: tuple[Need, ...] = ()  # what it asks for besides (app/domain/lexicon.py NEEDS)

    @property
    def all_intents(self) -> tuple[Intent, ...]:
        return tuple(dict.fromkeys((self.intent, *self.intents)))


def normalize(question: str) -> str:
    """Full-width forms folded (NFKC), lowercase, straight apostrophes: what every pattern reads."""
    return unicodedata.normalize("NFKC", question).lower().replace("\u2019", "'").replace("\u2018", "'")


def language_of(question: str) -> Locale | None:
    """The language whose letters weigh most (each locale's script in its lexicon.json: an English
    word weighs as much as two Chinese characters, about a Chinese word); on a tie the script of the
    lighter units wins. None when no letters say ("ok", "A-1", "12.00", "?")."""
    text = normalize(question)
    best: tuple[int, int, str] | None = None
    for script in lexicon.current().scripts:
        units = sum(
            1
            for unit in script.letters.findall(text)
            if len(unit) >= script.min_length and unit.isalpha() and unit not in script.neutral
        )
        if units and (best is None or (units * script.weight, -script.weight) > best[:2]):
            best = (units * script.weight, -script.weight, script.language)
    return best[2] if best is not None else None


def asked(text: str) -> Intent | None:
    """The intent the words of a normalized question say, or None when they say none."""
    words = lexicon.current()
    out_of_scope = False
    for clause in words.clause.split(text):
        for intent, pattern in words.signals:
            if pattern.search(clause):
                if intent != "out_of_scope":
                    return intent
                out_of_scope = True
                break
    return "out_of_scope" if out_of_scope else None


def asked_all(text: str) -> list[Intent]:
    """Every answerable intent the clauses of a normalized question say, in their order: the first
    clause's by every signal, a further one's by the specific signals only (Lexicon.secondary)."""
    words = lexicon.current()
    found: list[Intent] = []
    for clause in words.clause.split(text):
        signals = words.signals if not found else words.secondary
        intent = next((i for i, pattern in signals if pattern.search(clause)), None)
        if intent is not None and intent != "out_of_scope" and intent not in found:
            found.append(intent)
    return found


def needs_of(text: str) -> tuple[Need, ...]:
    """What a normalized question asks for besides its intent, in NEEDS order."""
    needs = lexicon.current().needs
    return tuple(need for need in NEEDS if need in needs and needs[need].search(text))


def understand(question: str, lines: Sequence[Line], context: Context | None = None) -> Reading:
    text = normalize(question)
    words = lexicon.current()
    subjects, choices = match(text, lines)
    # A merchant's name says nothing of the customer's language ("what is 美团外卖").
    language = language_of(_without(text, subjects)) or language_of(question)
    if words.handover.search(text) and not words.not_handover.search(text):
        return Reading("out_of_scope", (), language, False, True, (), True)
    if words.acknowledgement.match(text):
        return Reading("out_of_scope", (), language, False, False, (), True)
    previous = bool(
        context is not None and words.previous.search(text) and words.previous_ask.search(words.previous.sub(" ", text))
    )
    body = words.previous.sub(" ", text) if previous else text
    intent = said = asked(body)
    if context is not None and choices and words.other.search(text):
        # "and the other coffee one?": of the lines it fits, those the previous turn was not about.
        rest = tuple(label for label in choices if label not in context.subjects)
        if len(rest) == 1:
            subjects, choices = rest, ()
        elif 1 < len(rest) < len(choices):
            choices = rest
    named = subjects or choices
    followup = previous
    if context is not None and not named and language is not None:
        if intent is None and (previous or words.elliptical.search(body)):
            intent, subjects, followup = context.intent, context.subjects, True
        elif intent is not None and (previous or words.anaphor.search(body) or words.continuation.search(body)):
            followup = True
            subjects = context.subjects if intent == context.intent else ()
    elif context is not None and (intent is None or words.continuation.search(body) or words.elliptical.search(body)):
        followup = True  # "the gym one?", "健身那笔呢？": the conversation goes on, about another line
    if named and intent in (None, "bill_change"):
        intent = _line_intent(named[0], lines)
    elif subjects and intent == "charge" and all(_line_intent(s, lines) == "fees_interest" for s in subjects):
        intent = "fees_interest"  # "3.12 charge what is it", "18.6是啥": a fee or interest line, by its kind
    if intent is None:
        return Reading("out_of_scope", (), language, False, False, (), False)
    # The further clauses' intents; not the one a named line replaced ("is it City Gym?" is the
    # charge, not a bill change too), and a charge only with a line it names.
    further = [i for i in asked_all(body) if i not in (intent, said) and (i != "charge" or subjects)]
    intents = (intent, *further)
    return Reading(intent, subjects, language, followup, False, choices, True, previous, intents, needs_of(text))


def _without(text: str, labels: Sequence[str]) -> str:
    for label in labels:
        text = text.replace(label.lower(), " ")
    return text


def _line_intent(label: str, lines: Sequence[Line]) -> Intent:
    kind = next((line.kind for line in lines if line.label == label), "purchase")
    return _KIND_INTENT.get(kind, "charge")
