"""What each locale says around personal data (prompts/locales/<locale>/pii.json), read as the
locale's search words are (app/data/search_text.py): the phone regions a customer writing it most
likely dials from (and its script: a question in Chinese gets China's regions whatever the
customer's locale), the phrases that introduce a name ("my name is", 我叫), relations ("my husband"),
titles before a name (Dr) or after it (先生), currency words (a number before "yen" is an amount),
account words, surnames (Chinese has no spaces: a name is found by its surname and ends at a
stop word such as 的), business nouns (a
name before 店 is a shop's), and the common words that are never a name."""

from __future__ import annotations

import functools

import msgspec

from app import locales
from app.domain.vocabulary import Locale


class PiiWords(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    script: str  # a character class: a text with one of these may be written in this locale
    regions: tuple[str, ...]  # ISO 3166 regions, most likely first
    introducers: tuple[str, ...]
    relations: tuple[str, ...]
    relation_lead: tuple[str, ...]  # "my" of "my husband", 我 of 我老公
    titles: frozenset[str]  # before a name, without the dot
    titles_after: tuple[str, ...]  # after a name
    here: frozenset[str]  # "Ann Lee here"
    particles: frozenset[str]  # "van der" inside a name
    not_name_endings: tuple[str, ...]  # a lower-case word ending so is no name ("charged", "really")
    currency: tuple[str, ...]
    account: tuple[str, ...]
    secret: tuple[str, ...]  # a security code, a PIN, a one-time code: the digits after it are masked
    marks: tuple[str, ...]  # what may stand between an account or a secret's word and its digits (":")
    copulas: tuple[str, ...]  # what may stand between a secret's word and its digits ("is")
    surnames: frozenset[str]
    stops: tuple[str, ...]  # words that end a name written without spaces (的 of 张伟的)
    business: tuple[str, ...]
    common: frozenset[str]


@functools.cache
def pii_words(locale: Locale) -> PiiWords:
    path = locales.root() / locale / "pii.json"
    return msgspec.json.decode(path.read_bytes(), type=PiiWords)


def every_locale() -> tuple[PiiWords, ...]:
    """A customer may write in either language whatever their locale: names are looked for in all."""
    return tuple(pii_words(locale) for locale in locales.locales())
