"""How well the bank's library answers policy questions: labelled questions in both locales against the
demo banks' libraries (app/knowledge/demo), each labelled with the one article that answers it best,
or with none. Two sets: `knowledge_questions.jsonl`, written before the retrieval was tuned (and tuned
against), and `knowledge_blind.jsonl`, written by someone who never saw the rules or the other set.

A question is read as the service reads it (app/answers/turns.py): the rules, then the library's
search; the passage served is the best that fits when the question is the library's (policy), as the
deterministic answer quotes it and as the model is offered it first. Counted per locale: the right
article served, a wrong article served (the key error: a near miss stated as the bank's answer), no
article served for a question that has one, and, for a question with no article, no passage served
(the customer is told it is not in the help content and offered a person)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import asyncpg
import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from app import locales
from app.data.knowledge_search import search
from app.domain.knowledge import read_with_library
from app.domain.understanding import understand
from app.domain.vocabulary import Locale

HERE = Path(__file__).parent
SETS = {"tuned": HERE / "knowledge_questions.jsonl", "blind": HERE / "knowledge_blind.jsonl"}


class LabelledQuestion(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    id: str
    tenant: str  # a demo bank's slug
    locale: Locale
    question: str
    article: str | None  # the article that answers it best; None: the library has none


class Served(msgspec.Struct, frozen=True):
    case: LabelledQuestion
    intent: str
    article: str | None  # the article whose passage is served first; None: no passage


class Tally(msgspec.Struct, kw_only=True):
    answerable: int = 0
    right: int = 0
    wrong: int = 0
    unanswered: int = 0  # an article answers it, none was served
    without: int = 0  # questions the library has no article for
    declined: int = 0  # of those, no passage served
    near_misses: int = 0  # of those, a passage served anyway

    def share(self, part: int, whole: int) -> float:
        return part / whole if whole else 1.0


def load(name: str) -> list[LabelledQuestion]:
    lines = SETS[name].read_text(encoding="utf-8").splitlines()
    return [msgspec.json.decode(line, type=LabelledQuestion) for line in lines if line.strip()]


async def serve(
    conn: AsyncConnection | asyncpg.Connection, tenants: Mapping[str, int], cases: Sequence[LabelledQuestion]
) -> list[Served]:
    """Each question as the service reads it; `tenants`: the demo banks' ids by slug."""
    served = []
    for case in cases:
        found = await search(conn, tenants[case.tenant], case.locale, case.question)
        fitting = found.fitting()
        reading = read_with_library(understand(case.question, ()), case.question, fitting)
        article = fitting[0].article if "policy" in reading.all_intents and fitting else None
        served.append(Served(case, reading.intent, article))
    return served


def tally(served: Sequence[Served]) -> dict[str, Tally]:
    """Per locale, and "all"."""
    out = {key: Tally() for key in ("all", *locales.locales())}
    for s in served:
        for t in (out["all"], out[s.case.locale]):
            if s.case.article is None:
                t.without += 1
                t.declined += s.article is None
                t.near_misses += s.article is not None
            else:
                t.answerable += 1
                t.right += s.article == s.case.article
                t.wrong += s.article not in (None, s.case.article)
                t.unanswered += s.article is None
    return out


def markdown(results: Mapping[str, dict[str, Tally]]) -> str:
    """One table: each set and locale's right, wrong and declined shares."""
    rows = [
        "| set | locale | right article served | wrong article served | none served (has one) "
        "| no article: declined | no article: near miss |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, by_locale in results.items():
        for locale, t in by_locale.items():
            right = f"{t.right}/{t.answerable} ({t.share(t.right, t.answerable):.0%})"
            declined = f"{t.declined}/{t.without} ({t.share(t.declined, t.without):.0%})"
            rows.append(f"| {name} | {locale} | {right} | {t.wrong} | {t.unanswered} | {declined} | {t.near_misses} |")
    return "\n".join(rows)


async def traffic_shift(
    conn: AsyncConnection | asyncpg.Connection,
    tenants: Mapping[str, int],
    mix: Sequence[tuple[str, float, Mapping[str, list[str]]]],
) -> tuple[float, float]:
    """The share of a traffic mix's questions (app/replay/traffic.py) read as out of scope, which a widget
    conversation hands to a person: by the rules alone, and once the library answers what it can."""
    before = after = 0.0
    for _, share, asked in mix:
        questions = [(locale, q) for locale, written in asked.items() for q in written]
        for locale, question in questions:
            for tenant in tenants.values():
                weight = share / len(questions) / len(tenants)
                reading = understand(question, ())
                fitting = (await search(conn, tenant, locale, question)).fitting()
                before += weight * (reading.intent == "out_of_scope" and not reading.handover)
                read = read_with_library(reading, question, fitting)
                after += weight * (read.intent == "out_of_scope" and not read.handover)
    return before, after
