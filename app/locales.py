"""Every language the service speaks is a folder, prompts/locales/<locale>/, and this module is where
the folders register: adding a folder adds a locale, and nothing else in the service names one.

A folder holds what its locale says: `locale.json` (its name, how its sentences join, how it writes
amounts and dates, whether the console or the model speaks it), `words.json` (the chat widget's and
the demo page's strings, and all the console says where it speaks this locale), the answers'
templates (`claims.j2`, `fallback/`, `macros.j2`, `conversation.j2`), its search words
(`search.json`, `pii.json`), the words a question is understood by (`lexicon.json`, its script among
them) and a sentence is checked by (`validation.json`), and its customers' demo data and generated
questions (`demo.json`, `traffic.json`, read through `read` by app/demo.py and app/replay/traffic.py).
The files are read here, at the edge; the domain is handed plain data (`formatting.Style`,
`Lexicon`, `validation.Checks`).
`use()` points the process at another folder of locales (the tests' generated pseudo-locale,
tests/pseudo_locale.py); the service reads no variable of its own here (its settings: app/settings/)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from app.domain import formatting, lexicon, validation
from app.domain.vocabulary import Intent
from app.settings import PROJECT_ROOT

DEFAULT_ROOT = PROJECT_ROOT / "prompts" / "locales"
_root = DEFAULT_ROOT
_listeners: list[Callable[[], None]] = []  # caches built from the folders (app/prompts.py's templates)


class LocaleData(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: str  # in its own words: what an agent and a picker show ("简体中文")
    language: str  # the language a question is detected in (app/domain/understanding.py)
    joiner: str  # what joins two sentences: a space, or nothing (Chinese)
    # The share of a sentence's letters that are Chinese characters, at least and at most: a model's
    # sentence outside it is in the wrong language (app/domain/validation.py).
    han_share: tuple[float, float]
    formatting: formatting.Style
    # The one question per intent whose answer may be cached: precomputed, or generated at batch
    # priority after a miss. A customer's own wording is never cached (app/answers/cache.py).
    canonical: dict[Intent, str] = {}
    default: bool = False  # the locale of a customer or a page that says none
    console: bool = False  # the console's: it speaks one language to the bank's staff
    model: bool = False  # the model's: it plans in one language, the service says it in the customer's


def root() -> Path:
    return _root


def use(folder: Path) -> None:
    """Read the locales from `folder` from now on (the tests' pseudo-locale); every cache is rebuilt."""
    global _root
    _root = Path(folder)
    registry.cache_clear()
    words.cache_clear()
    _read.clear()
    understood.cache_clear()
    checks.cache_clear()
    for clear in _listeners:
        clear()


def on_change(clear: Callable[[], None]) -> None:
    """Call `clear` whenever `use()` points the service at another folder."""
    _listeners.append(clear)


@functools.cache
def registry() -> dict[str, LocaleData]:
    """Each locale folder's `locale.json`, by the folder's name."""
    found = {
        path.parent.name: msgspec.json.decode(path.read_bytes(), type=LocaleData)
        for path in sorted(_root.glob("*/locale.json"))
    }
    for flag in ("default", "console", "model"):
        if sum(getattr(data, flag) for data in found.values()) != 1:
            raise ValueError(f'exactly one locale in {_root} must say "{flag}": true')
    return found


def locales() -> tuple[str, ...]:
    return tuple(registry())


def default() -> str:
    return next(name for name, data in registry().items() if data.default)


def console() -> str:
    """The locale the console speaks, whatever the tenant's customers speak."""
    return next(name for name, data in registry().items() if data.console)


def model() -> str:
    """The locale the model plans in, whatever the customer's language."""
    return next(name for name, data in registry().items() if data.model)


def data(locale: str) -> LocaleData:
    try:
        return registry()[locale]
    except KeyError:
        raise ValueError(f"unsupported locale {locale!r}: no folder {_root / locale}") from None


def check(locale: str | None) -> None:
    """A request's locale: one with a folder, or none (msgspec turns the ValueError into a 400)."""
    if locale is not None and locale not in registry():
        raise ValueError(f"locale must be one of {', '.join(registry())}")


def closest(requested: str | None, language: str | None = None, page: str | None = None) -> str | None:
    """The locale to answer in: the question's language (`language`, as detected), said the way the
    requested locale says it where the two share the language ("en" asked on an "en-XA" page is
    "en-XA"), else the way the `page` does (the widget's page, whatever the conversation spoke last:
    "en" asked after a Chinese answer on an "en-XA" page is "en-XA"); the requested locale when the
    question's language is unknown."""
    known = registry()
    if language is None:
        return requested if requested in known else None
    for candidate in (requested, page):
        if candidate in known and known[candidate].language == language:
            return candidate
    same = [name for name, d in known.items() if d.language == language]
    return language if language in same else next(iter(same), None)


class _ByLocale(Mapping[str, Any]):
    """One field of every locale's data, by locale (`JOINERS["zh-CN"]`)."""

    def __init__(self, field: str) -> None:
        self.field = field

    def __getitem__(self, locale: str) -> Any:
        return getattr(data(locale), self.field)

    def __iter__(self) -> Iterator[str]:
        return iter(registry())

    def __len__(self) -> int:
        return len(registry())


JOINERS: Mapping[str, str] = _ByLocale("joiner")


class _Canonical(Mapping[Intent, Mapping[str, str]]):
    """Each cacheable intent's canonical question, by locale (`CANONICAL_QUESTIONS["payment"]["en"]`):
    the intents are those the default locale words."""

    def __getitem__(self, intent: Intent) -> Mapping[str, str]:
        return {name: d.canonical[intent] for name, d in registry().items() if intent in d.canonical}

    def __iter__(self) -> Iterator[Intent]:
        return iter(data(default()).canonical)

    def __len__(self) -> int:
        return len(data(default()).canonical)


CANONICAL_QUESTIONS: Mapping[Intent, Mapping[str, str]] = _Canonical()


def money(amount: Decimal, currency: str, locale: str, *, sign: bool = False) -> str:
    return formatting.money(amount, currency, data(locale).formatting, sign=sign)


def day(value: date, locale: str) -> str:
    return formatting.day(value, data(locale).formatting)


@functools.cache
def words(locale: str) -> dict[str, Any]:
    """What a locale's screens say (`words.json`): the widget's, the demo page's and the console's."""
    data(locale)
    decoded: dict[str, Any] = msgspec.json.decode((_root / locale / "words.json").read_bytes())
    return decoded


T = TypeVar("T")
_read: dict[tuple[str, str, type], Any] = {}  # read(), by locale, file and the type it is read as


def read(locale: str, file: str, kind: type[T]) -> T:
    """One JSON file of a locale's folder decoded as `kind`, the reader's own typed view of it (the
    demo's data words, the replayed traffic's questions); read once until `use()`."""
    key = (locale, file, kind)
    if key not in _read:
        data(locale)
        _read[key] = msgspec.json.decode((_root / locale / file).read_bytes(), type=kind)
    decoded: T = _read[key]
    return decoded


def each(file: str) -> dict[str, Any]:
    """One JSON file of every locale's folder (`lexicon.json`, `keyfields.json`), decoded, by locale."""
    return {name: msgspec.json.decode((_root / name / file).read_bytes()) for name in registry()}


@functools.cache
def understood() -> lexicon.Lexicon:
    """What question understanding reads (app/domain/lexicon.py): every locale's `lexicon.json`,
    handed to the domain by app/__init__.py."""
    return lexicon.build(each("lexicon.json"), {name: d.language for name, d in registry().items()})


@functools.cache
def checks() -> validation.Checks:
    """What the truth contract checks a sentence by (app/domain/validation.py): every locale's
    `validation.json`, and the model's locale's month names, handed to the domain below."""
    return validation.build(each("validation.json"), data(model()).formatting.months)


validation.current.provide(checks)


def version_files() -> list[Path]:
    """The files whose bytes make an answer: a changed one is a new prompt version (the words a
    question is understood by and a sentence is checked by among them)."""
    files = ("locale.json", "lexicon.json", "validation.json")
    return sorted([*_root.rglob("*.j2"), *(path for name in files for path in _root.glob(f"*/{name}"))])
