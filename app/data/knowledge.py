"""The bank's help-centre library in Postgres: imports, drafts, approvals, and what the console lists.

Versions are never edited: a change is a new version, a draft until another person approves it (or
live at once when the bank's own pipeline imports it reviewed). Approving retires the version it
replaces; a retired version keeps its text, its author and approver, and is never quoted again (only
live versions are searched). Every write runs in the caller's transaction: a library file lands whole
or not at all."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.data.search_text import analysed, search_locale
from app.domain.knowledge import ArticleIn, VersionStatus, passages
from app.domain.vocabulary import Locale
from app.errors import AlreadyExists, NotFound

IMPORTED_BY = "import"  # the author of a version a library file loaded
PIPELINE = "the bank's review pipeline"  # who approved a version imported live


class ImportReport(msgspec.Struct, frozen=True, kw_only=True):
    created: int  # articles new to the library
    changed: int  # articles given a new version
    unchanged: int  # articles whose text was already there: importing twice changes nothing


class VersionRow(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    article: str
    locale: Locale
    version: int
    title: str
    body: str
    tags: list[str]
    questions: list[str]
    status: VersionStatus
    author: str
    approved_by: str | None
    created_at: datetime
    approved_at: datetime | None


class ArticleRow(msgspec.Struct, frozen=True, kw_only=True):
    article: str
    locale: Locale
    title: str  # the live version's, or the newest draft's
    live_version: int | None
    drafts: int


_ARTICLE = text(
    "INSERT INTO knowledge_articles (tenant_id, slug, locale) VALUES (:tenant_id, :slug, :locale) "
    "ON CONFLICT (tenant_id, slug, locale) DO UPDATE SET slug = EXCLUDED.slug RETURNING id, (xmax = 0) AS created"
)
_VERSION_COLUMNS = """v.id, a.slug AS article, a.locale, v.version, v.title, v.body, v.tags, v.questions, v.status,
    v.author, v.approved_by, v.created_at, v.approved_at"""
_VERSIONS = f"""SELECT {_VERSION_COLUMNS} FROM knowledge_versions v JOIN knowledge_articles a ON a.id = v.article_id
    WHERE v.tenant_id = :tenant_id"""


async def import_library(
    conn: AsyncConnection, tenant_id: int, articles: list[ArticleIn], *, draft: bool = False
) -> ImportReport:
    """Load checked articles (app/domain/knowledge.py `parse_library`): live at once, or as drafts."""
    created = changed = unchanged = 0
    live: set[str] = set()  # the locales whose live articles changed
    for article in articles:
        row = (
            await conn.execute(_ARTICLE, {"tenant_id": tenant_id, "slug": article.id, "locale": article.locale})
        ).one()
        current = await _newest(conn, row.id, ("draft", "live") if draft else ("live",))
        if current is not None and _same(current, article):
            unchanged += 1
            continue
        if draft:
            await _add_version(conn, tenant_id, row.id, article, "draft", IMPORTED_BY)
        else:
            version_id = await _add_version(conn, tenant_id, row.id, article, "draft", IMPORTED_BY)
            await _make_live(conn, tenant_id, version_id, PIPELINE)
            live.add(article.locale)
        created += row.created
        changed += not row.created
    for locale in sorted(live):
        await _count_terms(conn, tenant_id, locale)
    return ImportReport(created=created, changed=changed, unchanged=unchanged)


async def save_draft(conn: AsyncConnection, tenant_id: int, article: ArticleIn, author: str) -> VersionRow:
    """A console edit: a new draft of the article (a new article when none has its id and locale);
    it replaces the article's older drafts, which nobody approved."""
    row = await _article(conn, tenant_id, article)
    version_id = await _add_version(conn, tenant_id, row.id, article, "draft", author)
    await conn.execute(
        text(
            "UPDATE knowledge_versions SET status = 'retired' "
            "WHERE article_id = :article_id AND status = 'draft' AND id <> :id"
        ),
        {"article_id": row.id, "id": version_id},
    )
    return await version(conn, tenant_id, version_id)


async def approve(conn: AsyncConnection, tenant_id: int, version_id: int, approver: str) -> VersionRow:
    """Make a draft live (it answers from now on): never its own author's to approve."""
    draft = await version(conn, tenant_id, version_id)
    if draft.status != "draft":
        raise AlreadyExists(f"version {draft.version} of {draft.article!r} is {draft.status}, not a draft")
    if draft.author == approver:
        raise PermissionError("a draft is approved by someone other than its author")
    await _make_live(conn, tenant_id, version_id, approver)
    await _count_terms(conn, tenant_id, draft.locale)
    return await version(conn, tenant_id, version_id)


async def version(conn: AsyncConnection, tenant_id: int, version_id: int) -> VersionRow:
    """One version of the tenant's library; NotFound for another tenant's, as for a missing one."""
    row = (await conn.execute(text(f"{_VERSIONS} AND v.id = :id"), {"tenant_id": tenant_id, "id": version_id})).first()
    if row is None:
        raise NotFound(f"no article version {version_id}")
    return msgspec.convert(row._asdict(), VersionRow)


async def versions(conn: AsyncConnection, tenant_id: int, article: str, locale: str) -> list[VersionRow]:
    """Every version of one article, newest first: the audit trail of its text."""
    rows = await conn.execute(
        text(f"{_VERSIONS} AND a.slug = :slug AND a.locale = :locale ORDER BY v.version DESC"),
        {"tenant_id": tenant_id, "slug": article, "locale": locale},
    )
    return [msgspec.convert(row._asdict(), VersionRow) for row in rows]


async def library(conn: AsyncConnection, tenant_id: int) -> list[ArticleRow]:
    """The tenant's articles: the live version of each, and how many drafts wait for review."""
    rows = await conn.execute(
        text(
            """SELECT a.slug AS article, a.locale,
                   COALESCE(max(v.title) FILTER (WHERE v.status = 'live'),
                            (array_agg(v.title ORDER BY v.version DESC) FILTER (WHERE v.status = 'draft'))[1]) AS title,
                   max(v.version) FILTER (WHERE v.status = 'live') AS live_version,
                   count(*) FILTER (WHERE v.status = 'draft') AS drafts
               FROM knowledge_articles a JOIN knowledge_versions v ON v.article_id = a.id
               WHERE a.tenant_id = :tenant_id
               GROUP BY a.slug, a.locale HAVING count(*) FILTER (WHERE v.status IN ('live', 'draft')) > 0
               ORDER BY a.locale, a.slug"""
        ),
        {"tenant_id": tenant_id},
    )
    return [msgspec.convert(row._asdict(), ArticleRow) for row in rows]


async def _article(conn: AsyncConnection, tenant_id: int, article: ArticleIn) -> Any:
    """The article's row (its id, and whether it was created now)."""
    values = {"tenant_id": tenant_id, "slug": article.id, "locale": article.locale}
    return (await conn.execute(_ARTICLE, values)).one()


def _same(row: VersionRow, article: ArticleIn) -> bool:
    return (row.title, row.body, row.tags, row.questions) == (
        article.title,
        article.body,
        list(article.tags),
        list(article.questions),
    )


async def _newest(conn: AsyncConnection, article_id: int, statuses: tuple[str, ...]) -> VersionRow | None:
    row = (
        await conn.execute(
            text(
                f"SELECT {_VERSION_COLUMNS} FROM knowledge_versions v JOIN knowledge_articles a ON a.id = v.article_id "
                "WHERE v.article_id = :article_id AND v.status = ANY(:statuses) ORDER BY v.version DESC LIMIT 1"
            ),
            {"article_id": article_id, "statuses": list(statuses)},
        )
    ).first()
    return None if row is None else msgspec.convert(row._asdict(), VersionRow)


async def _add_version(
    conn: AsyncConnection, tenant_id: int, article_id: int, article: ArticleIn, status: VersionStatus, author: str
) -> int:
    """The article's next version and its passages."""
    config, locale = search_locale(article.locale).config, article.locale
    title = analysed(article.title, locale)
    version_id: int = (
        await conn.execute(
            text(
                """INSERT INTO knowledge_versions
                       (tenant_id, article_id, locale, version, title, body, tags, questions, status, author, search)
                   SELECT :tenant_id, :article_id, :locale, COALESCE(max(version), 0) + 1, :title, :body, :tags,
                          :questions, :status, :author,
                          setweight(to_tsvector(CAST(:config AS regconfig), :title_words), 'A')
                          || setweight(to_tsvector(CAST(:config AS regconfig), :asked_words), 'B')
                          || setweight(to_tsvector(CAST(:config AS regconfig), :body_words), 'C')
                   FROM knowledge_versions WHERE article_id = :article_id RETURNING id"""
            ),
            {
                "tenant_id": tenant_id,
                "article_id": article_id,
                "locale": locale,
                "title": article.title,
                "body": article.body,
                "tags": list(article.tags),
                "questions": list(article.questions),
                "status": status,
                "author": author,
                "config": config,
                "title_words": title,
                "asked_words": analysed(" ".join((*article.questions, *article.tags)), locale),
                "body_words": analysed(article.body, locale),
            },
        )
    ).scalar_one()
    await conn.execute(
        text(
            """INSERT INTO knowledge_passages (version_id, n, text, search)
               VALUES (:version_id, :n, :text,
                       setweight(to_tsvector(CAST(:config AS regconfig), :title), 'A')
                       || to_tsvector(CAST(:config AS regconfig), :words))"""
        ),
        [
            {
                "version_id": version_id,
                "n": n,
                "text": part,
                "config": config,
                "title": title,
                "words": analysed(part, locale),
            }
            for n, part in enumerate(passages(article.body), start=1)
        ],
    )
    return version_id


async def _make_live(conn: AsyncConnection, tenant_id: int, version_id: int, approver: str) -> None:
    """The version answers from now on; the live one before it is retired."""
    await conn.execute(
        text(
            """UPDATE knowledge_versions SET status = 'retired'
               WHERE status = 'live' AND article_id = (SELECT article_id FROM knowledge_versions WHERE id = :id)"""
        ),
        {"id": version_id},
    )
    await conn.execute(
        text(
            "UPDATE knowledge_versions SET status = 'live', approved_by = :approver, approved_at = now() "
            "WHERE id = :id AND tenant_id = :tenant_id"
        ),
        {"id": version_id, "tenant_id": tenant_id, "approver": approver},
    )


async def _count_terms(conn: AsyncConnection, tenant_id: int, locale: str) -> None:
    """Count again how many live articles of the locale hold each search term (once per change: a
    library file's import counts once, at its end)."""
    values = {"tenant_id": tenant_id, "locale": locale}
    await conn.execute(text("DELETE FROM knowledge_terms WHERE tenant_id = :tenant_id AND locale = :locale"), values)
    await conn.execute(
        text(
            """INSERT INTO knowledge_terms (tenant_id, locale, term, articles)
               SELECT :tenant_id, :locale, word, ndoc FROM ts_stat(format(
                   'SELECT search FROM knowledge_versions WHERE tenant_id = %s AND locale = %L AND status = ''live''',
                   CAST(:tenant_id AS bigint), CAST(:locale AS text)))"""
        ),
        values,
    )
    await conn.execute(
        text(
            """INSERT INTO knowledge_libraries (tenant_id, locale, articles)
               SELECT :tenant_id, CAST(:locale AS varchar), count(*) FROM knowledge_versions
               WHERE tenant_id = :tenant_id AND locale = :locale AND status = 'live'
               ON CONFLICT (tenant_id, locale) DO UPDATE SET articles = EXCLUDED.articles, counted_at = now()"""
        ),
        values,
    )
