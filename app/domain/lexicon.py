"""The words question understanding reads (app/domain/understanding.py), built from every locale's own
(prompts/locales/<locale>/lexicon.json, read by app/locales.py and handed here as plain data).

Every pattern runs on the normalized question: NFKC (full-width digits and punctuation become ASCII),
lowercase, curly apostrophes straight. A pattern is the alternation of the locales' patterns for it, so
a question in any of them is read with one pass. Kept small and reviewed: a word added to a locale
changes the intent of every question containing it, so each addition comes with a case in tests/data.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from app.domain.vocabulary import Intent

_NEVER = re.compile(r"(?!)")
# Language-neutral: "1299???" asks about that amount; a bare "12.00" does not.
_BARE_AMOUNT = r"^\W*{number}\s*\?+\W*$"


@dataclass(frozen=True, slots=True)
class Script:
    """How a locale's letters are counted when a question's language is decided."""

    language: str  # the locale's language (locale.json), what understanding.language_of returns
    letters: re.Pattern[str]  # one unit: a word, or a character where the script has no spaces
    weight: int  # how many units of the other scripts one of these outweighs
    min_length: int  # shorter units say nothing ("a", "I")
    neutral: frozenset[str]  # units said the same in every language ("ok", "hmm")
    spaced: bool  # False: words run together, a label's parts are its runs of these letters


@dataclass(frozen=True, eq=False, slots=True)  # hashed by identity: the caches of subjects.py key on it
class Lexicon:
    # Intent signals in precedence order: inside one clause the first that matches decides. Requests
    # nobody here may serve come first; fees before payment ("late payment fee"); a comparison before
    # payment ("why do I owe more although I paid"); a payment *to a merchant* is a charge.
    signals: tuple[tuple[Intent, re.Pattern[str]], ...]
    # A further clause adds its intent to a multi-part question only through these: a bare "balance"
    # or "what is this" in a later clause goes with the first clause's intent (the last two signals).
    secondary: tuple[tuple[Intent, re.Pattern[str]], ...]
    # A question about how the bank works rather than about this statement (app/domain/knowledge.py).
    general: re.Pattern[str]
    # Each clause is read on its own; the first one asked that this assistant can answer decides.
    clause: re.Pattern[str]
    handover: re.Pattern[str]
    not_handover: re.Pattern[str]  # asking about the assistant, or declining a person
    acknowledgement: re.Pattern[str]  # thanks or ok: no question, nothing taken from the context
    elliptical: re.Pattern[str]  # only makes sense after another: takes intent and subjects from it
    continuation: re.Pattern[str]  # "and the interest?": goes on from the previous turn
    other: re.Pattern[str]  # "the other coffee one": the line the context was not about
    anaphor: re.Pattern[str]  # points back at what the previous turn was about
    previous: re.Pattern[str]  # "what about last month?": the same question about the statement before
    previous_ask: re.Pattern[str]
    # Amounts that point at a line ("the 12 euro one"), not at a difference ("my bill is 12 higher").
    amount_references: tuple[re.Pattern[str], ...]
    # A kind of line named by its kind ("why am I paying interest"): every line of that kind.
    kinds: dict[str, re.Pattern[str]]
    # Category -> (words a customer uses, words found in the labels of that kind).
    categories: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]
    needs: dict[str, re.Pattern[str]]  # what a question asks for besides its intent (answer_policy.py)
    generic: tuple[str, ...]  # words or parts of a label that say nothing about which line it is
    scripts: tuple[Script, ...]
    runs: re.Pattern[str]  # a run of the letters of the scripts written without spaces
    locales: tuple[str, ...]  # every locale with a folder: what a stored article may be written in


def _either(patterns: Sequence[str]) -> re.Pattern[str]:
    return re.compile("|".join(p for p in patterns if p)) if any(patterns) else _NEVER


def build(words: Mapping[str, Mapping[str, Any]], languages: Mapping[str, str]) -> Lexicon:
    """One lexicon from every locale's `lexicon.json` (decoded), by locale, in the locales' order;
    `languages` is each locale's language. Locales of one language may share their words (a copy of
    the same words adds nothing)."""
    parts = list(words.values())
    intents = [[intent for intent, _ in part["signals"]] for part in parts]
    if any(order != intents[0] for order in intents):
        raise ValueError("every locale's lexicon.json must list the same signals, in the same order")

    def field(name: str) -> re.Pattern[str]:
        return _either(list(dict.fromkeys(part.get(name, "") for part in parts)))

    def keyed(name: str) -> dict[str, re.Pattern[str]]:
        keys = dict.fromkeys(key for part in parts for key in part.get(name, {}))
        return {key: _either(list(dict.fromkeys(part.get(name, {}).get(key, "") for part in parts))) for key in keys}

    signals = tuple(
        (cast(Intent, intent), _either(list(dict.fromkeys(part["signals"][i][1] for part in parts))))
        for i, intent in enumerate(intents[0])
    )
    units = "|".join(dict.fromkeys(part["units"] for part in parts if part.get("units")))
    number = r"[$€£¥]?\s*(\d{1,7}(?:[.,]\d{1,2})?)\s*" + f"(?:{units})?" + r"(?![a-z0-9])"  # not "the 3rd"
    references = [*dict.fromkeys(ref for part in parts for ref in part.get("amount_references", ())), _BARE_AMOUNT]
    categories: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for part in parts:
        for name, (asked, found) in part.get("categories", {}).items():
            had = categories.get(name, ((), ()))
            categories[name] = (
                tuple(dict.fromkeys([*had[0], *asked])),
                tuple(dict.fromkeys([*had[1], *found])),
            )
    scripts = tuple(
        {
            (languages[locale], part["script"]["letters"]): Script(
                languages[locale],
                re.compile(part["script"]["letters"]),
                int(part["script"]["weight"]),
                int(part["script"]["min_length"]),
                frozenset(part["script"].get("neutral", ())),
                bool(part["script"].get("spaced", True)),
            )
            for locale, part in words.items()
        }.values()
    )
    unspaced = [script.letters.pattern for script in scripts if not script.spaced]
    return Lexicon(
        signals=signals,
        secondary=signals[:-2],
        general=field("general"),
        clause=field("clause"),
        handover=field("handover"),
        not_handover=field("not_handover"),
        acknowledgement=field("acknowledgement"),
        elliptical=field("elliptical"),
        continuation=field("continuation"),
        other=field("other"),
        anaphor=field("anaphor"),
        previous=field("previous"),
        previous_ask=field("previous_ask"),
        amount_references=tuple(re.compile(ref.replace("{number}", number)) for ref in references),
        kinds=keyed("kinds"),
        categories=categories,
        needs=keyed("needs"),
        generic=tuple(dict.fromkeys(word for part in parts for word in part.get("generic", ()))),
        scripts=scripts,
        runs=re.compile(f"(?:{'|'.join(unspaced)})+") if unspaced else _NEVER,
        locales=tuple(words),
    )


_source: Callable[[], Lexicon] | None = None


def provide(source: Callable[[], Lexicon]) -> None:
    """The edge (app/locales.py) says where the words come from: the domain reads no files."""
    global _source
    _source = source


def current() -> Lexicon:
    if _source is None:
        raise LookupError("no locale has handed over its words: import app.locales first")
    return _source()
