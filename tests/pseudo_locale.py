"""en-XA, the pseudo-locale: English with every letter accented and every vowel said twice (about a
third longer), generated from prompts/locales/en/ into a folder the tests point the service at
(app/locales.py `use`), as Android and Chromium test their translations. Used only in tests: a
string that reaches a screen or an answer without passing through the locale shows up as plain
English, which `english_words` finds.

Each file of the en folder is carried over: the JSON strings pseudo-localized and bracketed
("[Ŵĥýý îîš ɱýý ƀîîļļ ĥîîĝĥééŕ?]"), the templates' text and the text in their string literals
pseudo-localized (never a comparison's key, a slot's name or an imported template's path), and the
search words unchanged (they match what a customer writes)."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from app import locales
from app.api.console.views import reason_words
from app.domain.reasons import Reason

PSEUDO = "en-XA"
SOURCE = "en"
_PLAIN = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_ACCENTED = "åƀçðéƒĝĥîĵķļɱñöþǫŕšţûṽŵẋýžÅƁÇÐÉƑĜĤÎĴĶĻṀÑÖÞǪŔŠŢÛṼŴẊÝŽ"
_ACCENTS = str.maketrans(_PLAIN, _ACCENTED)
_VOWELS = set("aeiouyAEIOUY")
# What is never translated: a slot ("{new_balance}", "{s}") and a slot's part at a literal's edge
# ("{driver_" ~ n ~ "}"), an HTML entity.
_KEEP = re.compile(r"\{\w*\}|\{\w*$|^\w*\}|&\w+;")
_TAG = re.compile(r"(\{#.*?#\}|\{%.*?%\}|\{\{.*?\}\})", re.S)
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
# An ASCII word of two letters or more, or a code ("still_to_pay"): English that did not pass through the locale.
_ENGLISH = re.compile(r"(?<![\w{])[A-Za-z][A-Za-z_]+(?![\w}])")


def _letters(text: str) -> str:
    return "".join(c.translate(_ACCENTS) * (2 if c in _VOWELS else 1) for c in text)


def pseudo(text: str) -> str:
    """Accented and lengthened, slots kept: "Due on {date}" -> "Ðûûéé öñ {date}"."""
    out, start = [], 0
    for match in _KEEP.finditer(text):
        out += [_letters(text[start : match.start()]), match.group(0)]
        start = match.end()
    return "".join([*out, _letters(text[start:])])


# A regex's syntax, kept as it is: an escape, a character class, a group's opening, a repeat or a slot.
_SYNTAX = re.compile(r"\\.|\[(?:\\.|[^\]])*\]|\(\?(?:[:!=]|<[!=])|\{[\w,]*\}")


def pattern(regex: str) -> str:
    """A lexicon's pattern that reads the pseudo-locale's words: its letters accented and its vowels
    doubled as the words are ("\\bhigher\\b" -> "\\bĥîîĝĥééŕ\\b"); escapes, classes and groups kept."""
    out, start = [], 0
    for match in _SYNTAX.finditer(regex):
        out += [_letters(regex[start : match.start()]), match.group(0)]
        start = match.end()
    return "".join([*out, _letters(regex[start:])])


def _lexicon(data: dict[str, Any]) -> dict[str, Any]:
    """en's lexicon read in en-XA: what a customer types, pseudo-localized; what a statement's labels
    say (categories' label words, generic words) as it is; en-XA's letters counted as English words."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == "signals":
            out[key] = [[intent, pattern(p)] for intent, p in value]
        elif key in ("kinds", "needs"):
            out[key] = {k: pattern(p) for k, p in value.items()}
        elif key == "categories":
            out[key] = {k: [[pseudo(w) for w in asked], found] for k, (asked, found) in value.items()}
        elif key == "amount_references":
            out[key] = [pattern(p) for p in value]
        elif key == "script":
            accented = "".join(sorted(set(_ACCENTED.lower())))
            out[key] = {**value, "letters": value["letters"].replace("a-z", "a-z" + accented)}
        elif key == "generic":
            out[key] = value
        else:
            out[key] = pattern(value)
    return out


def bracketed(text: str) -> str:
    return f"[{pseudo(text)}]"


def _words(value: Any) -> Any:
    """A JSON file's strings, bracketed (the keys kept)."""
    if isinstance(value, str):
        return bracketed(value)
    if isinstance(value, list):
        return [_words(v) for v in value]
    if isinstance(value, dict):
        return {k: _words(v) for k, v in value.items()}
    return value


def _is_key(tag: str, start: int, end: int, literal: str) -> bool:
    """Whether a string literal in a template's tag is a key (compared, looked up, imported), not text."""
    before, after = tag[:start], tag[end:]
    return bool(
        re.match(r"\{%-?\s*(from|import|include)\b", tag)
        or re.search(r"(==|!=)\s*$", before)
        or re.search(r"\bin\s*\([^)]*$", before)
        # a filter's or a test's argument: selectattr("kind", "in", …); not "… else (…)"
        or re.search(r"(?<![\w.])(?!(?:else|if|and|or|not|in)\b)[A-Za-z_][\w.]*\s*\([^)]*$", before)
        or re.match(r"\s*:", after)
        or _KEEP.fullmatch(literal)
    )


def _tag(tag: str) -> str:
    if tag.startswith("{#"):
        return tag
    if re.match(r"\{%-?\s*(from|import|include)\b", tag):
        return tag.replace(f"locales/{SOURCE}/", f"locales/{PSEUDO}/")
    return _STRING.sub(
        lambda m: m.group(0) if _is_key(tag, m.start(), m.end(), m.group(1)) else f'"{pseudo(m.group(1))}"', tag
    )


def template(source: str) -> str:
    """A Jinja template's text and its text literals pseudo-localized; its logic as it was."""
    return "".join(_tag(part) if _TAG.fullmatch(part) else pseudo(part) for part in _TAG.split(source))


def write(root: Path, *, console: bool = False) -> Path:
    """Every locale of the service and en-XA beside them, in `root` (a fresh folder); with `console`,
    en-XA is the locale the console speaks instead of en."""
    for folder in locales.DEFAULT_ROOT.iterdir():
        shutil.copytree(folder, root / folder.name)
    target = root / PSEUDO
    shutil.rmtree(target, ignore_errors=True)
    for path in sorted((locales.DEFAULT_ROOT / SOURCE).rglob("*")):
        out = target / path.relative_to(locales.DEFAULT_ROOT / SOURCE)
        if path.is_dir():
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".j2":
            out.write_text(template(path.read_text(encoding="utf-8")), encoding="utf-8")
        elif path.name == "lexicon.json":
            lexicon = _lexicon(json.loads(path.read_text(encoding="utf-8")))
            out.write_text(json.dumps(lexicon, ensure_ascii=False), encoding="utf-8")
        elif path.name == "words.json":
            out.write_text(json.dumps(_words(json.loads(path.read_text(encoding="utf-8"))), ensure_ascii=False))
        elif path.name == "locale.json":
            data = json.loads(path.read_text(encoding="utf-8"))
            data.update(name=bracketed(data["name"]))
            data.update(default=False, console=console, model=False)  # en's other roles stay en's
            data["formatting"]["months"] = [pseudo(m) for m in data["formatting"]["months"]]
            data["canonical"] = {intent: pseudo(q) for intent, q in data.get("canonical", {}).items()}
            out.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        else:
            shutil.copyfile(path, out)
    if console:
        own = root / SOURCE / "locale.json"
        own.write_text(json.dumps({**json.loads(own.read_text(encoding="utf-8")), "console": False}), encoding="utf-8")
    return root


def english_words(text: str, allowed: tuple[str, ...] = ()) -> list[str]:
    """The plain English words in `text` once the `allowed` data (merchants' names, currency codes,
    what the test itself typed) is taken out: each is a string that skipped the locale."""
    for data in sorted(allowed, key=len, reverse=True):
        text = text.replace(data, " ")
    return _ENGLISH.findall(text)


def english_in_reasons(reasons: Iterable[Reason], folder: Path) -> dict[str, list[str]]:
    """Each reason (by `str`) as the console says it when it speaks en-XA, written in `folder`: the
    plain English words in it once its data (what the model or the engine wrote, a slot's name) is
    taken out."""
    with pseudo_locales(folder, console=True):
        return {
            str(r): english_words(reason_words(r), tuple(str(r.values[k]) for k in ("text", "slot") if k in r.values))
            for r in reasons
        }


@contextlib.contextmanager
def pseudo_locales(folder: Path, *, console: bool = False) -> Iterator[Path]:
    """The service reads its locales, en-XA among them, from `folder` while this lasts (with
    `console`, the console speaks en-XA)."""
    write(folder, console=console)
    locales.use(folder)
    try:
        yield folder
    finally:
        locales.use(locales.DEFAULT_ROOT)
