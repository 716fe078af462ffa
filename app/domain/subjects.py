"""Which statement lines a question points at: by name, nickname, category or amount.

A *mention* is one thing the question says ("gym", "City Gym", "coffee", "12 euro"); each mention
matches a set of labels. A mention that matches one label names it; one that matches several is
ambiguous and the customer is asked back (never a guess). How well a mention matches decides
between overlapping ones: the whole label, then a distinctive word of it ("the gym one" -> City
Gym), then a category ("the coffee one" -> Blue Cafe and STARBUCKS 1234). An amount narrows an
ambiguous name ("the 12 euro cafe one"), or stands alone ("the 12 euro one").

Amounts: a number written with cents matches that amount exactly; a whole number matches the line
of exactly that many units, or where there is none, the lines from it up to the next unit ("the 12
euro one" is the 12.00 line if there is one, else a 12.49 one).

A kind named by its kind word ("interest", "fees", 利息) is every line of that kind, unless a line of
that kind is named otherwise ("the late fee" is that one only).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal
from functools import lru_cache
from typing import NamedTuple

from app.domain import lexicon
from app.domain.lexicon import Lexicon

_WORD = re.compile(r"[a-z0-9\u00c0-\u024f']+")  # the words of the scripts written with spaces


@lru_cache(maxsize=8)
def _category_asked(words: Lexicon) -> dict[str, re.Pattern[str]]:
    return {
        name: re.compile("|".join(rf"(?<![a-z]){re.escape(w)}s?(?![a-z])" for w in asked))
        for name, (asked, _) in words.categories.items()
    }


class Line(NamedTuple):
    """One thing on the statement a question can point at."""

    label: str  # a merchant or fee description exactly as BillFacts labels it (Total.label / Entry.label)
    kind: str  # purchase | refund | fee | interest | payment | adjustment
    amount: Decimal  # positive for charges


class Matched(NamedTuple):
    subjects: tuple[str, ...]
    choices: tuple[str, ...]


class _Keys(NamedTuple):
    full: str  # the label as words, padded for whole-word search
    words: frozenset[str]  # distinctive words, singular
    han: tuple[str, ...]  # distinctive Chinese parts
    categories: frozenset[str]


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def words_of(text: str) -> list[str]:
    return [w.replace("'", "") for w in _WORD.findall(text)]


def _keys(label: str) -> _Keys:
    return _keys_in(label, lexicon.current())


@lru_cache(maxsize=4096)
def _keys_in(label: str, lex: Lexicon) -> _Keys:
    low = label.lower()
    words = words_of(low)
    han: set[str] = set()
    for run in lex.runs.findall(low):
        core = run
        for generic in lex.generic:
            core = core.replace(generic, "")
        han.update(part for part in (run, core, run[:2]) if len(part) >= 2)
    padded = f" {' '.join(words)} "
    categories = frozenset(
        name
        for name, (_, found) in lex.categories.items()
        if any(w in low for w in found)  # "mart" in "FreshMart" too
    )
    distinctive = frozenset(_stem(w) for w in words if len(w) >= 3 and w not in lex.generic and not w.isdigit())
    return _Keys(padded if words else "", distinctive, tuple(han), categories)


def amounts_asked(text: str) -> list[Decimal]:
    found: list[Decimal] = []
    for pattern in lexicon.current().amount_references:
        for match in pattern.finditer(text):
            found.append(Decimal(match.group(1).replace(",", ".")))
    return found


def _by_amount(asked: Decimal, lines: Sequence[Line]) -> set[str]:
    exact = {line.label for line in lines if line.amount == asked}
    if exact or int(asked.as_tuple().exponent) < 0:  # cents written: exactly that
        return exact
    return {line.label for line in lines if asked <= line.amount < asked + 1}


def match(text: str, lines: Sequence[Line]) -> Matched:
    """The labels `text` (a normalized question) names, or the choices when one mention fits several."""
    candidates = [line for line in lines if line.kind != "payment" and line.label.strip()]  # payments: their own intent
    if not candidates:
        return Matched((), ())
    qwords = words_of(text)
    padded = f" {' '.join(qwords)} "
    stems = {_stem(w) for w in qwords}
    by_word: dict[str, set[str]] = {}
    by_category: dict[str, set[str]] = {}
    resolved: set[str] = set()
    lex = lexicon.current()
    asked_categories = {name for name, pattern in _category_asked(lex).items() if pattern.search(text)}
    for label in dict.fromkeys(line.label for line in candidates):  # a label of many lines: asked once
        keys = _keys(label)
        if keys.full in padded if keys.full else label.lower() in text:
            resolved.add(label)
        for stem in keys.words & stems:
            by_word.setdefault(stem, set()).add(label)
        for part in keys.han:
            if part in text:
                by_word.setdefault(part, set()).add(label)
        for name in keys.categories & asked_categories:
            by_category.setdefault(name, set()).add(label)
    ambiguous: list[set[str]] = []
    named = set().union(*by_word.values()) if by_word else set()
    # A word of a label beats a category: "the cafe one" is Blue Cafe, not STARBUCKS too.
    mentions = [*by_word.values(), *(c for c in by_category.values() if not c & named)]
    for labels in mentions:
        if labels & resolved:
            continue
        if len(labels) == 1:
            resolved |= labels
        else:
            ambiguous.append(labels)
    for amount in amounts_asked(text):
        fits = _by_amount(amount, candidates)
        if not fits or fits & resolved:
            continue
        narrowed = [a & fits for a in ambiguous if a & fits]
        if narrowed:
            ambiguous = narrowed
        elif not ambiguous:
            ambiguous.append(fits)
    resolved.update(*(a for a in ambiguous if len(a) == 1))
    ambiguous = [a for a in ambiguous if not a & resolved]
    # "why am I paying interest", "all these fees": every line of that kind, unless one is named otherwise.
    taken = resolved.union(*ambiguous)
    for kind, pattern in lex.kinds.items():
        of_kind = {line.label for line in candidates if line.kind == kind}
        if of_kind and not of_kind & taken and pattern.search(text):
            resolved |= of_kind
    order = {line.label: i for i, line in reversed(list(enumerate(lines)))}
    if resolved:
        return Matched(tuple(sorted(resolved, key=order.__getitem__)), ())
    if ambiguous:
        return Matched((), tuple(sorted(ambiguous[0])))
    return Matched((), ())
