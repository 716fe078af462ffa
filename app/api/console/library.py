"""The bank's help-centre library in the console: its articles, each article's versions (the audit
trail of its text: who wrote and who approved each), editing an article as a draft, and approving
another agent's draft, which makes it the one answers quote from then on (app/data/knowledge.py).

Every route is scoped by the signed-in agent's tenant: another bank's article or version is "not
found", exactly like a missing one."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Controller, Response, get, post
from litestar.datastructures import FormMultiDict
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath
from litestar.response import Redirect
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.console.forms import field, provide_form
from app.api.console.pages import EXCEPTION_HANDLERS, console_page
from app.api.console.session import PATH, provide_agent
from app.api.console.words import LANGUAGES, say, words
from app.data import knowledge
from app.data.agents import ConsoleSession
from app.data.database import autocommit
from app.domain.knowledge import ArticleIn, LibraryError, article_from
from app.errors import AlreadyExists, NotFound


def article_page_of(locale: str, article: str) -> str:
    return f"{PATH}/library/{locale}/{article}"


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.split("\n") if line.strip()]


class ArticleForm(msgspec.Struct, frozen=True, kw_only=True):
    """The edit form's fields: a version's, or what the agent sent (kept when it is refused)."""

    title: str = ""
    body: str = ""
    tags: str = ""  # one per line
    questions: str = ""  # one per line

    @classmethod
    def of(cls, version: knowledge.VersionRow | None) -> ArticleForm:
        if version is None:
            return cls()
        return cls(
            title=version.title, body=version.body, tags="\n".join(version.tags), questions="\n".join(version.questions)
        )

    @classmethod
    def posted(cls, form: FormMultiDict) -> ArticleForm:
        # Browsers send a textarea's line breaks as CR LF.
        return cls(**{name: field(form, name).replace("\r\n", "\n") for name in ("title", "body", "tags", "questions")})

    def article(self, locale: str, article: str) -> ArticleIn:
        """The article, checked like a library file's (LibraryError, naming the field)."""
        fields = {
            "id": article,
            "locale": locale,
            "title": self.title.strip(),
            "body": self.body,
            "tags": _lines(self.tags),
            "questions": _lines(self.questions),
        }
        return article_from(fields, "the article")


def _who(name: str) -> str:
    """Who wrote or approved a version: an agent's username as it is; the library's own names for a
    library file's import and the bank's pipeline (app/data/knowledge.py) in the console's words."""
    said: dict[str, str] = words()["page"]["article"]
    return {knowledge.IMPORTED_BY: said["imported"], knowledge.PIPELINE: said["pipeline"]}.get(name, name)


async def _article_page(
    db: AsyncEngine,
    agent: ConsoleSession,
    locale: str,
    article: str,
    *,
    error: str | None = None,
    posted: ArticleForm | None = None,
    status: int = 200,
) -> Response[Any]:
    async with autocommit(db) as conn:
        versions = await knowledge.versions(conn, agent.identity.tenant_id, article, locale)
    if not versions and posted is None:
        raise NotFound(f"article {article!r} ({locale}) not found")
    newest = next((v for v in versions if v.status in ("draft", "live")), None)
    return console_page(
        "article.html",
        status=status,
        agent=agent,
        locale=locale,
        article=article,
        versions=versions,
        form=posted or ArticleForm.of(newest),
        error=error,
        locales=LANGUAGES,
        who=_who,
    )


class LibraryController(Controller):
    path = f"{PATH}/library"
    include_in_schema = False
    dependencies = {"agent": Provide(provide_agent), "form": Provide(provide_form)}  # noqa: RUF012
    exception_handlers = EXCEPTION_HANDLERS

    @get("")
    async def library_page(
        self, agent: NamedDependency[ConsoleSession], db_engine: NamedDependency[AsyncEngine]
    ) -> Response[Any]:
        async with autocommit(db_engine) as conn:
            rows = await knowledge.library(conn, agent.identity.tenant_id)
        return console_page("library.html", agent=agent, rows=rows, locales=LANGUAGES)

    @get("/{locale:str}/{article:str}")
    async def article_page(
        self,
        agent: NamedDependency[ConsoleSession],
        db_engine: NamedDependency[AsyncEngine],
        locale: FromPath[str],
        article: FromPath[str],
    ) -> Response[Any]:
        return await _article_page(db_engine, agent, locale, article)

    @post("/{locale:str}/{article:str}/drafts")
    async def save_draft(
        self,
        agent: NamedDependency[ConsoleSession],
        form: NamedDependency[FormMultiDict],
        db_engine: NamedDependency[AsyncEngine],
        locale: FromPath[str],
        article: FromPath[str],
    ) -> Response[Any]:
        """The edit as a new draft: it answers nothing until another agent approves it."""
        posted = ArticleForm.posted(form)
        try:
            edited = posted.article(locale, article)
        except LibraryError as exc:  # its reason names the field as a library file does: kept
            error = say(words()["errors"]["draft"], reason=exc)
            return await _article_page(db_engine, agent, locale, article, error=error, posted=posted, status=422)
        async with autocommit(db_engine) as conn:
            await knowledge.save_draft(conn, agent.identity.tenant_id, edited, agent.identity.username)
        return Redirect(article_page_of(locale, article), status_code=303)

    @post("/versions/{version_id:int}/approve")
    async def approve(
        self,
        agent: NamedDependency[ConsoleSession],
        form: NamedDependency[FormMultiDict],  # asked for its CSRF check
        db_engine: NamedDependency[AsyncEngine],
        version_id: FromPath[int],
    ) -> Response[Any]:
        """A draft goes live: never by the agent who wrote it."""
        tenant, refused = agent.identity.tenant_id, None
        async with autocommit(db_engine) as conn:
            draft = await knowledge.version(conn, tenant, version_id)
            try:
                await knowledge.approve(conn, tenant, version_id, agent.identity.username)
            except PermissionError:
                refused = (words()["errors"]["own_draft"], 403)
            except AlreadyExists:
                refused = (words()["errors"]["not_a_draft"], 409)
        if refused is not None:
            error, status = refused
            return await _article_page(db_engine, agent, draft.locale, draft.article, error=error, status=status)
        return Redirect(article_page_of(draft.locale, draft.article), status_code=303)
