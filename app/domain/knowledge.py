"""The bank's own words: help-centre articles, quoted verbatim and never paraphrased.

An article (the bank's id, a locale, a title, a body, tags such as a fee's statement label) is split
into passages, its paragraphs: each is quoted alone, with the article's title as its source. What a
library file may hold is checked here, and every error names the article and the field.

Which passages may answer a question is decided in two steps: full-text search ranks candidate
articles and picks each one's best passage (app/data/knowledge_search.py, Postgres), and
`Found.fitting` keeps only those that cover the question's words well enough to be its answer;
nothing left means "not in our help content", never a near miss. The model then picks one of them by
number, or none (app/domain/plan.py)."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Literal, get_args

import msgspec

from app.domain import lexicon
from app.domain.facts import BillFacts, Entry
from app.domain.plan import fee_items
from app.domain.slots import items
from app.domain.understanding import Reading, normalize
from app.domain.vocabulary import Locale

# A version is a draft until approved; approving makes it live and retires the one it replaces.
VersionStatus = Literal["draft", "live", "retired"]
VERSION_STATUSES: tuple[VersionStatus, ...] = get_args(VersionStatus)

ARTICLE_ID = r"^[a-z0-9][a-z0-9._-]*$(?!\n)"  # no trailing newline either: ids are in URLs
MAX_PASSAGE = 1200  # characters: a passage is said whole, in a chat bubble
MAX_CANDIDATES = 3  # passages offered to the model: few, so that a small model can choose
# A candidate answers a question when it holds this share of the question's search terms, weighed by
# how rare each is in the library (the title counts): "what is the interest rate on savings?" shares
# "interest" and "rate" with the card's interest article, but not the rarer "savings", and is no
# question that article answers.
MIN_COVERAGE = 0.65
# Of the candidates the search ranks, those well behind the best are near misses, not choices; and
# so is one whose words meet the question's only here and there, far apart, in its body (the search's
# rank: its title or customer questions weigh 1.0 and 0.4 a match, the body 0.2, divided by the mean
# distance between the matches). Both values were set on the tuned questions (docs/knowledge.md).
MIN_SHARE_OF_BEST = 0.9
MIN_RANK = 0.3

ArticleId = Annotated[str, msgspec.Meta(min_length=1, max_length=100, pattern=ARTICLE_ID)]
Title = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
Body = Annotated[str, msgspec.Meta(min_length=1, max_length=50_000)]
Tag = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
AskedAs = Annotated[str, msgspec.Meta(min_length=1, max_length=300)]


class ArticleIn(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One article as a library file or the console writes it."""

    id: ArticleId
    locale: Locale
    title: Title
    body: Body
    tags: Annotated[list[Tag], msgspec.Meta(max_length=20)] = []
    # How customers ask what the article answers ("annual fee?", "年费能免吗"): searched, never quoted.
    questions: Annotated[list[AskedAs], msgspec.Meta(max_length=50)] = []


class LibraryIn(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    articles: list[ArticleIn]


class LibraryError(ValueError):
    """A library file that cannot be loaded; the message names the article and the field."""


_PATH = re.compile(r"at `\$\.articles\[(\d+)\]\.?(\w*)")


def parse_library(raw: bytes) -> list[ArticleIn]:
    """The articles of a library file (`{"articles": [...]}`), all checked; LibraryError otherwise."""
    try:
        library = msgspec.json.decode(raw, type=LibraryIn)
    except msgspec.ValidationError as error:
        raise LibraryError(_named(str(error), raw)) from None
    except msgspec.DecodeError as error:
        raise LibraryError(f"not a library file: {error}") from None
    seen: set[tuple[str, str]] = set()
    for i, article in enumerate(library.articles):
        _check_locale(article, f"article {i + 1} ({article.id!r})")
        where = f"article {i + 1} ({article.id!r}, {article.locale})"
        if (article.id, article.locale) in seen:
            raise LibraryError(f"{where}: id: a second article with this id and locale")
        seen.add((article.id, article.locale))
        check_article(article, where)
    return library.articles


def check_article(article: ArticleIn, where: str) -> None:
    """What the schema cannot say: a title and passages with words, none too long to be said whole."""
    if not article.title.strip():
        raise LibraryError(f"{where}: title: blank")
    parts = passages(article.body)
    if not parts:
        raise LibraryError(f"{where}: body: blank")
    for n, part in enumerate(parts, start=1):
        if len(part) > MAX_PASSAGE:
            raise LibraryError(f"{where}: body: paragraph {n} has {len(part)} characters, at most {MAX_PASSAGE}")


def article_from(fields: Mapping[str, object], where: str) -> ArticleIn:
    """One article from its fields (the console's edit form), checked like a file's article."""
    try:
        article = msgspec.convert(fields, ArticleIn)
    except msgspec.ValidationError as error:
        message = str(error)
        found = re.search(r" - at `\$\.(\w+)", message)
        raise LibraryError(f"{where}: {found.group(1)}: {message[: found.start()]}" if found else message) from None
    _check_locale(article, where)
    check_article(article, where)
    return article


def _check_locale(article: ArticleIn, where: str) -> None:
    """A locale with a folder (app/locales.py hands them over with their words), not only a well-formed one."""
    known = lexicon.current().locales
    if article.locale not in known:
        raise LibraryError(f"{where}: locale: must be one of {', '.join(known)}")


def _named(message: str, raw: bytes) -> str:
    """msgspec's `... - at `$.articles[3].locale`` as `article 4 ('late-fee'): locale: ...`."""
    found = _PATH.search(message)
    if found is None:
        return message
    index, field = int(found.group(1)), found.group(2)
    try:
        article = msgspec.json.decode(raw)["articles"][index]
        name = f" ({article['id']!r})" if isinstance(article.get("id"), str) else ""
    except (msgspec.DecodeError, KeyError, IndexError, TypeError, AttributeError):
        name = ""
    what = message[: found.start()].rstrip(" -")
    return f"article {index + 1}{name}: {field or 'article'}: {what}"


def passages(body: str) -> list[str]:
    """An article's passages: its paragraphs (blank lines between), exactly as written but for the
    blanks around them."""
    return [part.strip() for part in re.split(r"\n\s*\n", body) if part.strip()]


class Passage(msgspec.Struct, frozen=True, kw_only=True):
    """A live passage, as the service quotes it."""

    article: str  # the bank's article id
    version: int
    title: str
    n: int  # its place in the article
    text: str


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    """An article full-text search found for a question: its passage that fits the question best,
    and which of the question's search terms the whole article (title, questions, tags, body) holds."""

    passage: Passage
    rank: float  # the search's relevance (higher is better)
    terms: frozenset[str]


class Terms(msgspec.Struct, frozen=True, kw_only=True):
    """A question's search terms and how common each is in the library it is asked of."""

    total: int  # live articles in the question's locale
    frequency: dict[str, int]  # each of the question's search terms: the live articles that hold it

    def weight(self, term: str) -> float:
        """A term's weight (BM25's inverse document frequency): a word every article holds says little.
        A word no article holds is as often a customer's paraphrase as a topic the library lacks: it
        weighs as a word a third of the articles hold."""
        held = self.frequency.get(term, 0) or self.total / 3
        return math.log(1 + (self.total - held + 0.5) / (held + 0.5))

    def coverage(self, held: Iterable[str]) -> float:
        """The share of the question's terms, by weight, among `held` (an article's terms)."""
        need = sum(self.weight(t) for t in self.frequency)
        return sum(self.weight(t) for t in set(held) & self.frequency.keys()) / need if need else 0.0

    def deciding(self) -> list[str]:
        """The rarest terms an article must hold one of to fit: the search looks only at articles that
        do (the common words of a large library match thousands). An article without any of them holds
        at most the other known terms' weight; the fewest rarest terms that take that below
        MIN_COVERAGE of the question's weight are the deciding ones. Terms no article holds count in
        the question's weight, never in an article's: with too many of them nothing can fit (none)."""
        need = sum(self.weight(t) for t in self.frequency)
        known = sorted((t for t in self.frequency if self.frequency[t]), key=lambda t: (-self.weight(t), t))
        spare = sum(self.weight(t) for t in known) - MIN_COVERAGE * need  # what a fitting article may lack
        chosen: list[str] = []
        for term in known:
            if spare < 0 or sum(self.weight(t) for t in chosen) > spare:
                break
            chosen.append(term)
        return chosen


class Found(msgspec.Struct, frozen=True, kw_only=True):
    """What a question found in a library (app/data/knowledge_search.py)."""

    terms: Terms
    candidates: list[Candidate]  # best ranked first
    tagged: dict[str, Passage]  # a label or kind asked about (lowercase): its tagged article's passage

    def fitting(self) -> list[Passage]:
        """The passages that may answer the question, in the search's order: the best ranked article,
        and any other nearly as well ranked (and ranked at least MIN_RANK), that each hold at least
        MIN_COVERAGE of the question's terms by weight. None: the library does not answer it (a near
        miss is never offered)."""
        if not self.candidates:
            return []
        best = self.candidates[0].rank
        near = [c for c in self.candidates if c.rank >= max(best * MIN_SHARE_OF_BEST, MIN_RANK)]
        return [c.passage for c in near if self.terms.coverage(c.terms) >= MIN_COVERAGE][:MAX_CANDIDATES]


class Quotes(msgspec.Struct, frozen=True, kw_only=True):
    """The bank's passages one answer may quote (app/answers/turns.py reads them with the facts)."""

    passages: tuple[Passage, ...] = ()  # the passages that fit the question, best first: PASSAGES
    reasons: tuple[Passage, ...] = ()  # why the statement's fees and interest were charged, one per article


def _fee_lines(facts: BillFacts) -> list[Entry]:
    """The statement's fee and interest lines that slots name, in their order (the slots' lines read
    once, not once per fee: a long statement has two dozen)."""
    shown = items(facts)
    return [shown[n - 1] for n in fee_items(facts)]


def reason_tags(facts: BillFacts) -> list[str]:
    """What the articles that explain this statement's fees and interest are tagged with: each fee's
    statement label ("Late payment fee"), and the kinds of its fee and interest lines."""
    fees = _fee_lines(facts)
    return list(dict.fromkeys([*(e.label for e in fees if e.label), *(e.kind for e in fees)]))


def reasons(facts: BillFacts, tagged: Mapping[str, Passage]) -> tuple[Passage, ...]:
    """For each fee and interest line in statement order, the passage tagged with its label, else with
    its kind; each article once."""
    found: dict[str, Passage] = {}
    for entry in _fee_lines(facts):
        passage = tagged.get(entry.label.lower()) or tagged.get(entry.kind)
        if passage is not None:
            found.setdefault(passage.article, passage)
    return tuple(found.values())


def read_with_library(reading: Reading, question: str, fitting: Sequence[Passage]) -> Reading:
    """What a question is once the bank's help content is asked too (a passage fits it):
    - the policy intent alone, when the rules found nothing they answer (out of scope, but not a
      request for a person), or it asks how things work ("how is interest calculated?", "how do I
      avoid the late fee?") about no bill change and no line it names (a kind, such as interest, is
      no line);
    - a policy part after the statement's, when it asks about fees, a payment or an unnamed charge
      ("annual fee?", "did my payment arrive?"): the records answer, and the bank's passage with them;
    - unchanged otherwise: a bill change, a named line, a request for a person, a question back."""
    if not fitting or reading.handover or reading.choices or reading.intent == "bill_change":
        return reading
    named = reading.subjects and reading.intent != "fees_interest"
    if reading.intent == "out_of_scope" or (lexicon.current().general.search(normalize(question)) and not named):
        return dataclasses.replace(reading, intent="policy", intents=("policy",), certain=True)
    if named or "policy" in reading.all_intents:
        return reading
    return dataclasses.replace(reading, intents=(*reading.all_intents, "policy"))


def quoted_digest(digest: str, quoted: Iterable[Passage]) -> str:
    """A cache key's digest of facts, with the versions of the passages the answer quotes: an approved
    change is a new key, never answered with the old text."""
    versions = ",".join(f"{p.article}@{p.version}" for p in quoted)
    return hashlib.sha256(f"{digest}\0{versions}".encode()).hexdigest() if versions else digest


NO_QUOTES = Quotes()
