"""The console's pages: every one with the same security headers, the sign-in and account pages
(built from several look-ups), and the error pages the console's exceptions become."""

from __future__ import annotations

from datetime import date
from typing import Any

import structlog
from litestar import Request, Response
from litestar.datastructures import Cookie
from litestar.exceptions import HTTPException
from litestar.response import Redirect, Template
from litestar.types import ExceptionHandlersMap
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.console.session import PATH, LoginRequired, login_csrf_cookie
from app.api.console.views import statement_view
from app.api.console.words import LANGUAGES, page_context, say, words
from app.conversations.values import NotYours
from app.data.agents import ConsoleSession
from app.data.audit import recent_answers
from app.data.database import autocommit
from app.data.directory import account_overview
from app.data.history import load_history
from app.domain.facts import compute_facts
from app.errors import DatabaseUnavailable, NotFound, Shed, UnreadableData
from app.security import new_csrf_token
from app.settings import Settings

log = structlog.get_logger("bill_assistant.errors")

# Pages hold customers' data: never cached, never framed, never followed by a full Referer.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def console_page(
    name: str,
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
    cookies: list[Cookie] | None = None,
    **context: Any,
) -> Template:
    return Template(
        f"console/{name}",
        context=page_context() | context,
        status_code=status,
        headers=SECURITY_HEADERS | (headers or {}),
        cookies=cookies,
    )


def sign_in_page(
    settings: Settings, *, status: int = 200, error: str | None = None, tenant: str = "", username: str = ""
) -> Template:
    token = new_csrf_token()  # a fresh double-submit pair with every form
    return console_page(
        "login.html",
        status=status,
        cookies=[login_csrf_cookie(settings, token)],
        login_csrf=token,
        error=error,
        tenant=tenant,
        username=username,
    )


async def account_page(
    db: AsyncEngine,
    agent: ConsoleSession,
    account_ref: str,
    *,
    question: str = "",
    locale: str | None = None,
    error: str | None = None,
    status: int = 200,
) -> Template:
    tenant, today = agent.identity.tenant_id, date.today()
    async with autocommit(db) as conn:
        account = await account_overview(conn, tenant, account_ref)
        if account is None:
            raise NotFound(f"account {account_ref!r} not found")
        history = await load_history(conn, tenant, account_ref, None, today)
        answers = await recent_answers(conn, tenant, account.id)
    # The same facts the answers are built from, computed without asking any model.
    statement = statement_view(compute_facts(history, today)) if history and history.statements else None
    return console_page(
        "account.html",
        status=status,
        agent=agent,
        account=account,
        statement=statement,
        answers=answers,
        question=question,
        locale=locale or account.customer_locale,
        locales=LANGUAGES,
        error=error,
    )


def _to_login(request: Request, exc: LoginRequired) -> Response[Any]:  # type: ignore[type-arg]
    return Redirect(f"{PATH}/login", status_code=303)


def _error(status: int, title: str, message: str, headers: dict[str, str] | None = None, **slots: object) -> Template:
    """An error page: `title` and `message` are keys of the console's error words, the message's slots filled."""
    said = words()["errors"]
    return console_page(
        "error.html", status=status, headers=headers, title=said[title], message=say(said[message], **slots)
    )


# Each error page says its case in the console's words; the service's own reason (in English, for
# developers) goes to the log, not to the page.
def _http_error(request: Request, exc: HTTPException) -> Response[Any]:  # type: ignore[type-arg]
    if exc.status_code == 403:  # the one refusal the console raises itself: a form's stale token (forms.py)
        return _error(403, "refused", "csrf")
    if exc.status_code == 404:
        return _error(404, "not_found", "not_found_message")
    log.info("console_error", status=exc.status_code, detail=exc.detail)
    if exc.status_code == 400:  # a form's bytes or characters (app/api/body.py)
        return _error(400, "not_sent", "bad_form")
    return _error(exc.status_code, "wrong", "wrong_message")


def _not_found(request: Request, exc: NotFound) -> Response[Any]:  # type: ignore[type-arg]
    return _error(404, "not_found", "not_found_message")


def _shed(request: Request, exc: Shed) -> Response[Any]:  # type: ignore[type-arg]
    """429 (this bank's rate) or 503 (overloaded, shutting down), with Retry-After, as a page."""
    retry = max(1, int(exc.retry_after_s))
    return _error(exc.status, "busy", f"shed_{exc.status}", headers={"Retry-After": str(retry)}, s=retry)


def _database_unavailable(request: Request, exc: DatabaseUnavailable) -> Response[Any]:  # type: ignore[type-arg]
    log.warning("database unavailable", cause=repr(exc.__cause__))
    retry = exc.retry_after_s
    return _error(503, "unavailable", "database", headers={"Retry-After": str(retry)}, s=retry)


def _not_yours(request: Request, exc: NotYours) -> Response[Any]:  # type: ignore[type-arg]
    return _error(403, "refused", "not_yours")


def _unreadable_data(request: Request, exc: UnreadableData) -> Response[Any]:  # type: ignore[type-arg]
    log.warning("console_error", status=422, detail=str(exc))
    return _error(422, "unreadable", "unreadable_message")


# The console's errors are pages too (the API's are JSON): a lapsed session goes to the sign-in page.
EXCEPTION_HANDLERS: ExceptionHandlersMap = {
    LoginRequired: _to_login,
    HTTPException: _http_error,
    NotFound: _not_found,
    Shed: _shed,
    DatabaseUnavailable: _database_unavailable,
    NotYours: _not_yours,
    UnreadableData: _unreadable_data,
}
