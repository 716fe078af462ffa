"""People's names in a question (app/pii/masker.py says what is masked and why).

Two sources of evidence, and nothing else (no list of first names guesses at strangers):
1. The bank's own customer directory: every customer of the tenant, not only the asker. A full name
   anywhere, in any case; a part of three letters or more ("Murphy" of "Liam Murphy") anywhere, in
   any case, unless the part is also a common word ("Bill", "Mark"): then only capitalized and not
   the first word of a sentence. Chinese names whole (王芳), found as a substring.
2. A name the text introduces, by the locale's words (pii.json):
   - after an introducer ("my name is", "I'm", "this is", 我叫, 我是, 本人), a relation ("my
     husband", 我老公), a title (Dr, Mrs) or a sign-off ("Regards,"), capitalized words are a name
     unless all of them are common words ("I'm Confused", "I'm Not Happy" name nobody; "I'm Will
     Smith", "Mr Robert Brown" do); initials count ("J. Smith");
   - lower-case words need more: after a title or a relation, one name-shaped word (a word that is
     neither common nor ends like "-ing", "-ed", "-ly"); after an introducer, two of them
     ("i am john smith"; "i am charged twice" and "i'm confused" have none), or a directory part;
   - "<Name> here" / "<Name> speaking";
   - Chinese: after an introducer or a relation, a surname of the locale's list and at most two more
     characters up to a boundary (punctuation, a digit, a stop word such as 的: 我是张艳，), or the word the segmenter
     (jieba) reads as a person's name there; a segmented person's name (`nr*`) that starts with a
     surname anywhere (张伟的账单), or follows one (刘 + 秀英), unless it is a common word the
     segmenter's dictionary mistakes for a name (谢谢) or a business noun follows it (李宁专卖店 is a
     shop); before a title after a name (李先生, 杨静女士) the surname and what the segmenter joins
     to it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator

from app.pii.words import PiiWords, every_locale

Range = tuple[int, int]
_LATIN = re.compile(r"[A-Za-zÀ-ÖØ-öø-ɏ]+(?:['’-][A-Za-zÀ-ÖØ-öø-ɏ]+)*")
_HAN = re.compile(r"[\u4e00-\u9fff]")
_GAP = re.compile(r"[ \t]*,?[ \t]*")  # between an introducer and the name
_SENTENCE_END = ".!?\n"


class Token:
    __slots__ = ("end", "lower", "start", "word")

    def __init__(self, match: re.Match[str]) -> None:
        word = match.group()
        if word.lower().endswith(("'s", "’s")) and len(word) > 3:  # "Ann's": the name is Ann
            word = word[:-2]
        self.start, self.end, self.word, self.lower = match.start(), match.start() + len(word), word, word.lower()

    @property
    def capitalized(self) -> bool:
        return self.word[0].isupper()


class Directory:
    """A tenant's customer names, ready to be looked for."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        self.full: set[tuple[str, ...]] = set()
        self.parts: set[str] = set()
        self.han: set[str] = set()
        for name in names:
            name = " ".join(name.split())
            if _HAN.search(name):
                self.han.update(n for n in re.findall(r"[\u4e00-\u9fff·]{2,}", name))
            words = tuple(t.group().lower() for t in _LATIN.finditer(name))
            if words:
                self.full.add(words)
                self.parts.update(w for w in words if len(w) >= 3)
        self.longest = max((len(f) for f in self.full), default=0)


def _name_shaped(token: Token, words: PiiWords, directory: Directory) -> bool:
    lower = token.lower
    if lower in directory.parts:
        return True
    return (
        len(lower) >= 2
        and lower not in words.common
        and not (len(lower) >= 6 and lower.endswith(words.not_name_endings))
    )


def _strong(token: Token, words: PiiWords, directory: Directory) -> bool:
    """A directory part that is no common word: a name wherever it stands."""
    return token.lower in directory.parts and token.lower not in words.common


def _following(text: str, tokens: list[Token], at: int) -> list[Token]:
    """The tokens that follow position `at`, each separated from the last by spaces only."""
    out: list[Token] = []
    for token in tokens:
        if token.start < at:
            continue
        gap = text[out[-1].end if out else at : token.start]
        allowed = " \t." if out and len(out[-1].word) == 1 else " \t" if out else " \t,:-–—"  # "J. Smith"
        if gap.strip(allowed) or len(gap) > 3:
            break
        out.append(token)
        if len(out) == 5:
            break
    return out


def _take(run: list[Token], words: PiiWords, directory: Directory, lower_needs: int) -> list[Token]:
    """The name at the head of `run`: capitalized words, or lower-case name-shaped ones (at least
    `lower_needs` of them, or one from the directory)."""
    if run and run[0].lower.rstrip(".") in words.titles:
        return []  # the title's own rule takes it
    name: list[Token] = []
    if run and run[0].capitalized:
        for token in run:
            if token.capitalized or (name and token.lower in words.particles):
                name.append(token)
            else:
                break
        while name and name[-1].lower in words.particles:
            name.pop()
        named = [t for t in name if t.lower not in words.common or t.lower in directory.parts]
        return name if named else []  # "I'm Not Happy" names nobody; "I'm Will Smith" does
    for token in run:
        particle = bool(name) and token.lower in words.particles
        if token.capitalized or not (particle or _name_shaped(token, words, directory)):
            break
        name.append(token)
    while name and name[-1].lower in words.particles:
        name.pop()
    known = any(t.lower in directory.parts for t in name)
    return name if len(name) >= lower_needs or (known and name) else []


@functools.lru_cache(maxsize=64)
def _phrase(options: tuple[str, ...]) -> re.Pattern[str]:
    escaped = sorted((re.escape(o).replace(r"\ ", r"\s+") for o in options), key=len, reverse=True)
    return re.compile(rf"(?<![\w'])(?:{'|'.join(escaped)})(?![\w'])", re.IGNORECASE)


def _latin_names(text: str, directory: Directory, words: PiiWords) -> Iterator[Range]:
    if words.surnames:  # a locale that finds names by their surname writes without spaces
        return
    tokens = [Token(m) for m in _LATIN.finditer(text)]
    for i, token in enumerate(tokens):
        for size in range(min(directory.longest, len(tokens) - i), 1, -1):  # a full name, any case
            if tuple(t.lower for t in tokens[i : i + size]) in directory.full:
                yield token.start, tokens[i + size - 1].end
        if token.lower in directory.parts:
            initial = not text[: token.start].strip() or text[: token.start].rstrip()[-1] in _SENTENCE_END
            beside = [t for t in tokens[max(0, i - 1) : i + 2] if t is not token and _strong(t, words, directory)]
            paired = any(not text[min(t.end, token.end) : max(t.start, token.start)].strip() for t in beside)
            if token.lower not in words.common or (token.capitalized and not initial) or paired:
                yield token.start, token.end
    rules = [(words.introducers, 2, ""), (words.titles, 1, r"\.?")]
    for pattern, needs, tail in rules:
        for match in _phrase(tuple(pattern)).finditer(text):
            end = match.end() + len(m.group()) if (m := re.match(tail, text[match.end() :])) else match.end()
            for t in _take(_following(text, tokens, end), words, directory, needs):
                yield t.start, t.end
    if words.relations:
        relation = _phrase(tuple(f"{lead_word} {r}" for lead_word in words.relation_lead for r in words.relations))
        for match in relation.finditer(text):
            for t in _take(_following(text, tokens, match.end()), words, directory, 1):
                yield t.start, t.end
    for i, token in enumerate(tokens):  # "Ann Lee here"
        if token.lower not in words.here:
            continue
        before: list[Token] = []
        for t in reversed(tokens[max(0, i - 3) : i]):  # the words right before it, nothing between
            if text[t.end : (before[0] if before else token).start].strip(" \t,"):
                break
            before.insert(0, t)
        while before and not (before[0].capitalized or _name_shaped(before[0], words, directory)):
            before.pop(0)
        named = [t for t in before if t.lower not in words.common or t.lower in directory.parts]
        plain = [t for t in before if not t.capitalized and not _name_shaped(t, words, directory)]
        if named and not plain and (before[0].capitalized or len(before) >= 2):  # not "i'm new here"
            yield before[0].start, before[-1].end


def _segmented(text: str) -> list[tuple[int, str, str]]:
    import jieba.posseg  # its tag table takes about a second to load: only where Chinese is masked

    if not jieba.dt.initialized:
        jieba.setLogLevel(60)
        jieba.initialize()
    out, at = [], 0
    for pair in jieba.posseg.cut(text):
        out.append((at, pair.word, pair.flag))
        at += len(pair.word)
    return out


def _surname(name: str, words: PiiWords) -> bool:
    return name[:1] in words.surnames or name[:2] in words.surnames


def _han_names(text: str, directory: Directory, words: PiiWords) -> Iterator[Range]:
    if not words.surnames or not _HAN.search(text):
        return
    segments = _segmented(text)
    person = {}
    for i, (at, word, flag) in enumerate(segments):
        word = word.removesuffix(next((t for t in words.titles_after if word.endswith(t)), ""))
        word = word.removesuffix(next((t for t in words.stops if word.endswith(t)), ""))  # 张平的 read as one
        if not flag.startswith("nr") or word in words.common:  # nr, nrfg, nrt: a person's name
            continue
        if not _surname(word, words) and at and text[at - 1] in words.surnames:
            at, word = at - 1, text[at - 1] + word  # 刘 + 秀英: the given name read apart from the surname
        if not _surname(word, words):
            continue
        after = segments[i + 1][1] if i + 1 < len(segments) else ""
        if word in words.surnames and 1 <= len(after) <= 2 and _HAN.match(after) and after not in words.stops:
            word += after  # 诸葛 + 明: a compound surname the segmenter left alone
        if 2 <= len(word) <= 4:
            person[at] = word
    for at, word in person.items():
        if not text.startswith(tuple(words.business), at + len(word)):
            yield at, at + len(word)
    relations = [f"{lead}{r}" for lead in words.relation_lead for r in words.relations]
    for phrase in (*words.introducers, *relations):
        for found in re.finditer(re.escape(phrase), text):
            at = found.end()
            stop = re.compile("|".join([f"(?s:(?!{words.script}).)", *map(re.escape, words.stops)])).search(text, at)
            rest = text[at : stop.start() if stop else len(text)]
            longest = 4 if rest[:2] in words.surnames else 3
            if at in person:  # the segmenter's reading first: 我老婆赵敏刷了 is 赵敏
                yield at, at + len(person[at])
            elif 2 <= len(rest) <= longest and _surname(rest, words):
                yield at, at + len(rest)
    for title in words.titles_after:
        for found in re.finditer(re.escape(title), text):
            at = found.start()
            joined = [(s, w) for s, w, _ in segments if s + len(w) == at and 2 <= len(w) <= 3 and _surname(w, words)]
            if joined:
                yield joined[0][0], at
            elif at and text[at - 1] in words.surnames:
                yield at - 1, at
            elif at >= 2 and text[at - 2 : at] in words.surnames:
                yield at - 2, at


def find_names(text: str, directory: Directory) -> list[Range]:
    """Every stretch of `text` that is a person's name, by any locale's rules."""
    found: set[Range] = set()
    if directory.han:  # the directory's Chinese names, whole, wherever they stand
        for start in range(len(text)):
            found.update((start, start + size) for size in (2, 3, 4) if text[start : start + size] in directory.han)
    for words in every_locale():
        found.update(_latin_names(text, directory, words))
        found.update(_han_names(text, directory, words))
    return sorted(found)
