"""What a question finds in the bank's live library, in one round trip on the answer's connection:
candidate articles by Postgres full-text search (ranked by `ts_rank_cd`; the title weighs most, then
the questions customers ask and the tags, then the body), each with its passage that fits the question
best; how many live articles hold each of the question's search terms (what makes a rare word count
more than a common one, app/domain/knowledge.py `Found.fitting`); and for each statement label or
transaction kind asked about, the passage of the article tagged with it that fits the question best."""

from __future__ import annotations

from collections.abc import Iterable

import asyncpg
import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from app.data.database import driver_of
from app.data.search_text import query_text, search_locale
from app.data.sql import Statement
from app.domain.knowledge import Candidate, Found, Passage
from app.domain.vocabulary import Locale

MAX_FOUND = 12  # candidate articles ranked by the search before `Found.fitting` chooses

_SEARCH = Statement(
    """
WITH q AS (
    SELECT array(SELECT DISTINCT unnest(tsvector_to_array(to_tsvector(CAST(:config AS regconfig), :query)))) AS terms
),
q_any AS (
    SELECT to_tsquery('simple', COALESCE(string_agg(quote_literal(t), ' | '), '')) AS query FROM q, unnest(q.terms) t
),
live AS (
    SELECT v.id, v.version, v.title, v.tags, v.search, a.slug
    FROM knowledge_versions v JOIN knowledge_articles a ON a.id = v.article_id
    WHERE v.tenant_id = :tenant_id AND v.status = 'live' AND a.locale = :locale
),
best AS (
    SELECT live.*, ts_rank_cd(live.search, q_any.query) AS rank
    FROM live, q_any WHERE live.search @@ q_any.query
    ORDER BY rank DESC, live.slug LIMIT :max_found
)
SELECT CAST(json_build_object(
    'total', (SELECT count(*) FROM live),
    'terms', (SELECT COALESCE(json_object_agg(t, (SELECT count(*) FROM live
                  WHERE live.search @@ to_tsquery('simple', quote_literal(t)))), '{}') FROM q, unnest(q.terms) t),
    'candidates', (SELECT COALESCE(json_agg(c ORDER BY c.rank DESC, c.article), '[]') FROM (
        SELECT best.slug AS article, best.version, best.title, p.n, p.text, best.rank,
               tsvector_to_array(best.search) AS terms
        FROM best, q_any, LATERAL (
            SELECT n, text FROM knowledge_passages WHERE version_id = best.id
            ORDER BY ts_rank_cd(search, q_any.query) DESC, n LIMIT 1) p) c),
    'tagged', (SELECT COALESCE(json_object_agg(tag, row_to_json(t)), '{}') FROM (
        SELECT DISTINCT ON (lower(tag)) lower(tag) AS tag, live.slug AS article, live.version, live.title, p.n, p.text
        FROM live JOIN knowledge_passages p ON p.version_id = live.id, unnest(live.tags) tag, q_any
        WHERE lower(tag) = ANY(:tags)
        ORDER BY lower(tag), ts_rank_cd(p.search, q_any.query) DESC, live.slug, p.n) t)
) AS text)"""
)


class _Row(msgspec.Struct, frozen=True):
    article: str
    version: int
    title: str
    n: int
    text: str
    rank: float = 0.0
    terms: list[str] = []

    def passage(self) -> Passage:
        return Passage(article=self.article, version=self.version, title=self.title, n=self.n, text=self.text)


class _Result(msgspec.Struct, frozen=True):
    total: int
    terms: dict[str, int]
    candidates: list[_Row]
    tagged: dict[str, _Row]


_decode = msgspec.json.Decoder(_Result).decode


async def search(
    conn: AsyncConnection | asyncpg.Connection,
    tenant_id: int,
    locale: Locale,
    question: str,
    tags: Iterable[str] = (),
) -> Found:
    """What the question finds in the tenant's live articles in its locale; `tags`: the labels and
    kinds whose tagged passage is wanted (case does not matter)."""
    raw = await driver_of(conn) if isinstance(conn, AsyncConnection) else conn
    values = {
        "tenant_id": tenant_id,
        "locale": locale,
        "config": search_locale(locale).config,
        "query": query_text(question, locale),
        "tags": sorted({tag.lower() for tag in tags}),
        "max_found": MAX_FOUND,
    }
    result = _decode(await raw.fetchval(_SEARCH.sql, *_SEARCH.args(values)))
    return Found(
        total=result.total,
        frequency=result.terms,
        candidates=[Candidate(passage=c.passage(), rank=c.rank, terms=frozenset(c.terms)) for c in result.candidates],
        tagged={tag: row.passage() for tag, row in result.tagged.items()},
    )
