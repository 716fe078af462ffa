"""What the console says, from the folder of the locale it speaks (prompts/locales/<locale>/words.json
"console"; app/locales.py `console()`): its pages' and script's words, and the words for a
statement, an answer and a conversation. Read at each use, so the service speaks a locale folder
from the moment it is pointed at it (the tests' pseudo-locale among them)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

from markupsafe import Markup

from app import locales


def words() -> dict[str, Any]:
    """The console locale's words (cached by app/locales.py until it reads another folder)."""
    found: dict[str, Any] = locales.words(locales.console())["console"]
    return found


def page_context() -> dict[str, Any]:
    """What every page in the console's language is rendered with: its words, their `fill` and
    `stamp`, and its `lang`."""
    return {"w": words(), "fill": fill, "stamp": stamp, "lang": locales.console()}


def say(text: str, /, **slots: object) -> str:
    """A sentence of the words with its slots filled: "Account {ref}" -> "Account A-1"."""
    return text.format_map(slots)


def fill(text: str, **slots: object) -> Markup:
    """The same in a page: the words and each slot escaped, unless the slot is markup (a link)."""
    return Markup.escape(text).format(**slots)


class _Names(Mapping[str, str]):
    """Each locale by its own name, and by the console's name for it where that differs:
    "简体中文 (Simplified Chinese)"; a locale the console's words do not name, by its own only."""

    def __getitem__(self, locale: str) -> str:
        if locale not in locales.registry():
            raise KeyError(locale)
        own = locales.data(locale).name
        theirs = words()["language_names"].get(locale, own)
        return own if theirs == own else f"{own} ({theirs})"

    def __iter__(self) -> Iterator[str]:
        return iter(locales.registry())

    def __len__(self) -> int:
        return len(locales.registry())


LANGUAGES: Mapping[str, str] = _Names()


def language(locale: str | None) -> str:
    return LANGUAGES.get(locale or "") or words()["unknown"]


def stamp(at: datetime | None, text: str) -> Markup:
    """A time for a sentence's slot, as a <time> element that machines read too where it has one."""
    attribute = Markup(' datetime="{}"').format(at.isoformat()) if at else ""
    return Markup("<time{}>{}</time>").format(attribute, text)
