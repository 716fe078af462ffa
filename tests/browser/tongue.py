"""The language a browser test runs in: en-XA, the generated pseudo-locale (tests/pseudo_locale.py),
which the console and the widget then speak, and English too where a test asks for `BOTH` (the
answers' exact English text, a conversation that changes language). A test says what a person reads
in English, as en's words say it (`t`: any other text fails), and reads it in the language it runs
in; in en-XA, an English word on a screen is a string that skipped the locale (`says_no_english`).
en-XA is en, accented and lengthened, so a test that passes in it holds for English's words too."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from playwright.async_api import Page

from app import locales
from app.api.console.words import say
from tests.pseudo_locale import PSEUDO, SOURCE, english_words, pseudo

BOTH = (SOURCE, PSEUDO)  # for `@pytest.mark.parametrize("tongue", BOTH, indirect=True)`


def _leaves(value: Any, path: tuple[str | int, ...] = ()) -> dict[str, tuple[str | int, ...]]:
    if isinstance(value, str):
        return {value: path}
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    found: dict[str, tuple[str | int, ...]] = {}
    for key, child in items:
        for text, at in _leaves(child, (*path, key)).items():
            found.setdefault(text, at)
    return found


@cache
def _english() -> dict[str, tuple[str | int, ...]]:
    """Each string of en's words.json (the widget's, the demo page's, the console's) by where it is."""
    return _leaves(locales.words(SOURCE))


async def page_text(page: Page) -> str:
    """All a page says: its title, its visible text (screen-reader-only text too), its labels, and the
    chat widget's (it renders in a shadow root)."""
    text: str = await page.evaluate(
        """() => {
            const said = (root) => [...root.querySelectorAll("[aria-label], [placeholder], [title]")].flatMap(
                (node) => [node.getAttribute("aria-label"), node.getAttribute("placeholder"), node.title]);
            const widget = document.querySelector("[data-bill-assistant]")?.shadowRoot;
            return [document.title, document.body.innerText, ...said(document),
                    ...(widget ? [widget.querySelector("section")?.innerText, ...said(widget)] : [])]
                .filter(Boolean).join("\\n");
        }"""
    )
    return text


def bank_data(slug: str) -> tuple[str, ...]:
    """What the pages show of the tests' bank as it is, in any language (tests/factories.py): its name,
    its customer and her card, their merchants and the currency's code, its agent, and the language
    its customers prefer by its own name ("English")."""
    customers = locales.data(SOURCE).name
    return (
        f"Bank {slug}",
        "Ann Lee",
        "C-1001",
        "A-1",
        "EUR",
        "City Gym",
        "FreshMart",
        "Netflix",
        "Ana Agent",
        customers,
    )


@dataclass(frozen=True)
class Tongue:
    locale: str  # en, or en-XA

    def t(self, english: str, **slots: object) -> str:
        """`english`, one of the locale's words (slots as written: "With {agent}"), as this language says
        it, its slots filled; KeyError for text that is not the locale's."""
        words: Any = locales.words(self.locale)
        for key in _english()[english]:
            words = words[key]
        return say(words, **slots)

    def before(self, english: str, slot: str, **slots: object) -> str:
        """`t` of `english` up to its `slot` (a time, a wait: what the test cannot know)."""
        return self.t(english, **slots, **{slot: "\0"}).split("\0")[0]

    def pattern(self, english: str, **slots: str) -> re.Pattern[str]:
        """`t` of `english` as a whole-text pattern, each slot a regex (what the test cannot know)."""
        marks = {slot: f"\0{i}\0" for i, slot in enumerate(slots)}
        text = re.escape(self.t(english, **marks))
        for slot, mark in marks.items():
            text = text.replace(re.escape(mark), slots[slot])
        return re.compile(f"^{text}$")

    def said(self, english: str, *data: str) -> str:
        """What the service says in this language where it says `english` in en, `data` (amounts with
        their currency, merchants' names) as it is: en-XA's words are en's, accented and lengthened."""
        if self.locale != PSEUDO:
            return english
        if not data:
            return pseudo(english)
        parts = re.split("(" + "|".join(re.escape(d) for d in sorted(data, key=len, reverse=True)) + ")", english)
        return "".join(part if part in data else pseudo(part) for part in parts)

    def write(self, english: str) -> str:
        """What a customer writes in this language where the English one writes `english`."""
        return self.said(english)

    @property
    def language(self) -> str:
        """This language by its own name, as the console names a message's or a customer's."""
        return locales.data(self.locale).name

    def demo(self, base_url: str, bank: str, customer: str = "C-1001") -> str:
        """The demo page of `bank` for `customer`, in this language."""
        return f"{base_url}/demo?bank={bank}&customer={customer}&locale={self.locale}"

    async def says_no_english(self, page: Page, *data: str) -> None:
        """In en-XA: nothing the page says is plain English but `data` (names, references, what was typed)."""
        if self.locale == PSEUDO:
            found = english_words(await page_text(page), data)
            assert found == [], (page.url, found)
