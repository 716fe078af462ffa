"""The text Postgres full-text search indexes and queries, per locale (prompts/locales/<locale>/search.json):
its text-search configuration, whether the text is first segmented into words (Chinese has no spaces,
and Postgres no Chinese parser: jieba segments it, pinned), and the question words that say nothing of
the topic ("how", "怎么": a help centre's articles do not use them, so they would only lower a
passage's share of the question)."""

from __future__ import annotations

import functools
import re

import jieba
import msgspec

from app import locales
from app.domain.vocabulary import Locale

_WORD = re.compile(r"\w+")


class SearchLocale(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    config: str  # a Postgres text-search configuration ("english", "simple")
    segment: bool
    ignore: frozenset[str]


@functools.cache
def search_locale(locale: Locale) -> SearchLocale:
    path = locales.root() / locale / "search.json"
    return msgspec.json.decode(path.read_bytes(), type=SearchLocale)


def load_segmenter() -> None:
    """Load the segmenter's dictionary now (about half a second), so that no request pays for it."""
    jieba.setLogLevel(60)
    jieba.initialize()
    for locale in locales.locales():
        search_locale(locale)


def analysed(text: str, locale: Locale) -> str:
    """The text as its locale's configuration should read it: Chinese as words between spaces (every
    word and the longer words' parts, so that 信用卡 finds 信用), other languages as written."""
    if not search_locale(locale).segment:
        return text
    if not jieba.dt.initialized:
        load_segmenter()
    return " ".join(word for word in jieba.cut_for_search(text) if _WORD.fullmatch(word))


def query_text(question: str, locale: Locale) -> str:
    """A question's words as searched: analysed, without the words that say nothing of its topic."""
    ignore = search_locale(locale).ignore
    return " ".join(word for word in _WORD.findall(analysed(question, locale)) if word.lower() not in ignore)
