"""What a question finds in the bank's live library, in two round trips on the answer's connection:
first its search terms and how many live articles hold each (app/domain/knowledge.py `Terms`, kept in
knowledge_terms and knowledge_libraries with every change); then the candidate articles by Postgres
full-text search among those holding one of the deciding (rarest) terms, ranked by `ts_rank_cd` on all
of them (the title weighs most, then the questions customers ask and the tags, then the body; divided
by the mean distance between the matches, normalization 4, so an article that repeats one word is not
ahead of one that holds the question's words together), each
with its passage that fits the question best; and for each statement label or transaction kind asked
about, the passage of the article tagged with it that fits the question best."""

from __future__ import annotations

from collections.abc import Iterable

import asyncpg
import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from app.data.database import driver_of
from app.data.search_text import query_text, search_locale
from app.data.sql import Statement
from app.domain.knowledge import Candidate, Found, Passage, Terms
from app.domain.vocabulary import Locale

MAX_FOUND = 12  # candidate articles ranked by the search before `Found.fitting` chooses

# Cast to text: the driver would decode JSON itself (to dicts, on a SQLAlchemy connection).
_TERMS = Statement(
    """
WITH q AS (SELECT DISTINCT unnest(tsvector_to_array(to_tsvector(CAST(:config AS regconfig), :query))) AS term)
SELECT CAST(json_build_object(
    'total', COALESCE((SELECT articles FROM knowledge_libraries WHERE tenant_id = :tenant_id AND locale = :locale), 0),
    'frequency', (SELECT COALESCE(json_object_agg(q.term, COALESCE(k.articles, 0)), '{}')
                  FROM q LEFT JOIN knowledge_terms k
                  ON k.tenant_id = :tenant_id AND k.locale = :locale AND k.term = q.term)
) AS text)"""
)
_TSQUERY = (
    "to_tsquery('simple', array_to_string(array(SELECT quote_literal(t) FROM unnest(CAST({} AS text[])) t), ' | '))"
)
_FOUND = Statement(
    f"""
WITH best AS (
    SELECT v.id, v.version, v.title, v.search, a.slug, ts_rank_cd(v.search, {_TSQUERY.format(":terms")}, 4) AS rank
    FROM knowledge_versions v JOIN knowledge_articles a ON a.id = v.article_id
    WHERE v.tenant_id = :tenant_id AND v.locale = :locale AND v.status = 'live'
      AND v.search @@ {_TSQUERY.format(":deciding")}
    ORDER BY rank DESC, a.slug LIMIT :max_found
)
SELECT CAST(json_build_object(
    'candidates', (SELECT COALESCE(json_agg(c ORDER BY c.rank DESC, c.article), '[]') FROM (
        SELECT best.slug AS article, best.version, best.title, p.n, p.text, best.rank,
               array(SELECT t FROM unnest(CAST(:terms AS text[])) t
                     WHERE best.search @@ to_tsquery('simple', quote_literal(t))) AS terms
        FROM best, LATERAL (
            SELECT n, text FROM knowledge_passages WHERE version_id = best.id
            ORDER BY ts_rank_cd(search, {_TSQUERY.format(":terms")}) DESC, n LIMIT 1) p) c),
    'tagged', (SELECT COALESCE(json_object_agg(tag, row_to_json(t)), '{{}}') FROM (
        SELECT DISTINCT ON (lower(tag)) lower(tag) AS tag, a.slug AS article, v.version, v.title, p.n, p.text
        FROM knowledge_versions v JOIN knowledge_articles a ON a.id = v.article_id
        JOIN knowledge_passages p ON p.version_id = v.id, unnest(v.tags) tag
        WHERE cardinality(CAST(:tags AS text[])) > 0
          AND v.tenant_id = :tenant_id AND v.locale = :locale AND v.status = 'live' AND lower(tag) = ANY(:tags)
        ORDER BY lower(tag), ts_rank_cd(p.search, {_TSQUERY.format(":terms")}) DESC, a.slug, p.n) t)
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
    candidates: list[_Row]
    tagged: dict[str, _Row]


_decode_terms = msgspec.json.Decoder(Terms).decode
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
    where = {"tenant_id": tenant_id, "locale": locale}
    terms = _decode_terms(
        await raw.fetchval(
            _TERMS.sql,
            *_TERMS.args({**where, "config": search_locale(locale).config, "query": query_text(question, locale)}),
        )
    )
    values = {
        **where,
        "terms": sorted(terms.frequency),
        "deciding": terms.deciding(),
        "tags": sorted({tag.lower() for tag in tags}),
        "max_found": MAX_FOUND,
    }
    result = _decode(await raw.fetchval(_FOUND.sql, *_FOUND.args(values)))
    return Found(
        terms=terms,
        candidates=[Candidate(passage=c.passage(), rank=c.rank, terms=frozenset(c.terms)) for c in result.candidates],
        tagged={tag: row.passage() for tag, row in result.tagged.items()},
    )
