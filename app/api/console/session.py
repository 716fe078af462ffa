"""Who is at the console.

The session cookie holds a random token (the database keeps only its digest). Every form carries a
CSRF token (app/api/console/forms.py): the session's own once signed in; before that, the sign-in
form's value must equal a cookie set with the form (a double submit), which another site can neither
read nor set."""

from __future__ import annotations

from typing import Literal

from litestar import Request
from litestar.datastructures import Cookie
from litestar.di import NamedDependency
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.request_log import request_state, stopwatch
from app.data.agents import ConsoleSession, find_session
from app.data.database import autocommit
from app.settings import Settings

PATH = "/console"
SESSION_COOKIE = "console_session"
LOGIN_CSRF_COOKIE = "console_login_csrf"
SameSite = Literal["lax", "strict"]


class LoginRequired(Exception):
    """No live session: the console answers with its sign-in page."""


def _cookie(key: str, value: str | None, path: str, max_age: int, settings: Settings, samesite: SameSite) -> Cookie:
    """No value: the cookie is removed."""
    return Cookie(
        key=key,
        value=value or "",
        path=path,
        max_age=max_age if value else 0,
        httponly=True,
        secure=settings.security.cookie_secure,
        samesite=samesite,
    )


def session_cookie(settings: Settings, token: str | None) -> Cookie:
    # Lax, not Strict: a link to a console page from a ticket or an e-mail opens signed in.
    return _cookie(SESSION_COOKIE, token, PATH, int(settings.security.console_session_ttl_s), settings, "lax")


def login_csrf_cookie(settings: Settings, token: str | None) -> Cookie:
    return _cookie(LOGIN_CSRF_COOKIE, token, f"{PATH}/login", 3600, settings, "strict")


async def current_session(request: Request, db: AsyncEngine) -> ConsoleSession | None:  # type: ignore[type-arg]
    token = request.cookies.get(SESSION_COOKIE)
    if not token:
        return None
    with stopwatch(request.scope).stage("auth"):
        async with autocommit(db) as conn:
            return await find_session(conn, token)


async def provide_agent(
    request: Request,  # type: ignore[type-arg]
    db_engine: NamedDependency[AsyncEngine],
) -> ConsoleSession:
    session = await current_session(request, db_engine)
    if session is None:
        raise LoginRequired
    request_state(request.scope)["tenant"] = session.identity.tenant_slug
    return session
