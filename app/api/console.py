"""The agent console (server-rendered HTML): a bank employee signs in, finds a customer, reads the
statement comparison, asks through the same pipeline as every channel (at console priority), and
inspects the audited answer: its validation, token use and latency waterfall.

Every page is scoped by the signed-in agent's tenant: another bank's customer, account or answer
is "not found", exactly like a missing one."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import date
from typing import Any

import msgspec
from litestar import Controller, Request, Response, get, post
from litestar.datastructures import Cookie, FormMultiDict
from litestar.di import NamedDependency, Provide
from litestar.exceptions import HTTPException, NotFoundException, ValidationException
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, ServerSentEvent, ServerSentEventMessage, Template
from sqlalchemy.ext.asyncio import AsyncEngine

from app.answers.messages import Ask, ChatEvent
from app.answers.schemas import ExplanationRequest
from app.answers.service import AnswerService, final_answer
from app.api.console_session import (
    CSRF_REFUSED,
    LOGIN_CSRF_COOKIE,
    PATH,
    SESSION_COOKIE,
    LoginRequired,
    csrf_matches,
    current_session,
    login_csrf_cookie,
    new_csrf_token,
    provide_agent,
    provide_form,
    session_cookie,
)
from app.api.console_views import LOCALES, answer_view, statement_view
from app.api.disconnect import until_disconnect
from app.api.event_stream import event_stream
from app.api.request_log import request_state, stopwatch
from app.data.agents import ConsoleSession, authenticate, end_session, start_session
from app.data.audit import find_answer, recent_answers
from app.data.database import autocommit
from app.data.directory import SEARCH_LIMIT, CustomerMatch, account_overview, search_customers
from app.data.history import load_history
from app.domain.facts import compute_facts
from app.errors import NotFound, Shed
from app.settings import Settings

WRONG_LOGIN = "Sign-in failed: the bank, username and password do not match an active agent."
# Pages hold customers' data: never cached, never framed, never followed by a full Referer.
_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def _page(
    name: str,
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
    cookies: list[Cookie] | None = None,
    **context: Any,
) -> Template:
    return Template(
        f"console/{name}",
        context=context,
        status_code=status,
        headers=_HEADERS | (headers or {}),
        cookies=cookies,
    )


def _field(form: FormMultiDict, name: str) -> str:
    value = form.get(name)
    return value if isinstance(value, str) else ""


def _question(form: FormMultiDict, account_ref: str) -> ExplanationRequest:
    """The asked question, checked like the API's (msgspec.ValidationError otherwise)."""
    # Browsers send a textarea's line breaks as CR LF; the question allows LF only.
    question = _field(form, "question").replace("\r\n", "\n")
    locale = _field(form, "locale") or None
    return msgspec.convert({"account_ref": account_ref, "question": question, "locale": locale}, ExplanationRequest)


async def _conversation(
    request: Request,  # type: ignore[type-arg]
    agent: ConsoleSession,
    form: FormMultiDict,
    answers: AnswerService,
    data: ExplanationRequest,
) -> tuple[AsyncIterator[ChatEvent], uuid.UUID]:
    """The question asked at console priority, and the id its audit row will have (the answer page
    links to the row: a cache hit answers with the original answer's id)."""
    principal = await answers.tenant(agent.identity.tenant_id)
    assert principal is not None  # a live session's agent belongs to an existing tenant
    request_state(request.scope)["channel"] = "console"
    if answers.settings.log_questions:
        request_state(request.scope)["log_extra"] = {"question": data.question}
    ask = Ask(
        principal=principal,
        request=data,
        channel="console",
        today=date.today(),
        stopwatch=stopwatch(request.scope),
        use_cache=_field(form, "regenerate") != "1",
    )
    return answers.converse(ask), ask.audit_id


def _login_page(
    settings: Settings, *, status: int = 200, error: str | None = None, tenant: str = "", username: str = ""
) -> Template:
    token = new_csrf_token()  # a fresh double-submit pair with every form
    return _page(
        "login.html",
        status=status,
        cookies=[login_csrf_cookie(settings, token)],
        login_csrf=token,
        error=error,
        tenant=tenant,
        username=username,
    )


async def _account_page(
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
    return _page(
        "account.html",
        status=status,
        agent=agent,
        account=account,
        statement=statement,
        answers=answers,
        question=question,
        locale=locale or account.customer_locale,
        locales=LOCALES,
        error=error,
    )


def _to_login(request: Request, exc: LoginRequired) -> Response[Any]:  # type: ignore[type-arg]
    return Redirect(f"{PATH}/login", status_code=303)


def _error(status: int, title: str, message: str, headers: dict[str, str] | None = None) -> Template:
    return _page("error.html", status=status, headers=headers, title=title, message=message)


def _http_error(request: Request, exc: HTTPException) -> Response[Any]:  # type: ignore[type-arg]
    titles = {403: "Refused", 404: "Not found"}
    return _error(exc.status_code, titles.get(exc.status_code, "Something is wrong"), exc.detail)


def _not_found(request: Request, exc: NotFound) -> Response[Any]:  # type: ignore[type-arg]
    return _error(404, "Not found", str(exc))


def _shed(request: Request, exc: Shed) -> Response[Any]:  # type: ignore[type-arg]
    """429 (this bank's rate) or 503 (overloaded, shutting down), with Retry-After, as a page."""
    retry = max(1, int(exc.retry_after_s))
    message = f"The question was not answered: {exc}. Try again in {retry} s."
    return _error(exc.status, "Busy", message, headers={"Retry-After": str(retry)})


class ConsoleController(Controller):
    path = PATH
    include_in_schema = False
    dependencies = {"agent": Provide(provide_agent), "form": Provide(provide_form)}  # noqa: RUF012
    exception_handlers = {  # noqa: RUF012
        LoginRequired: _to_login,
        HTTPException: _http_error,
        NotFound: _not_found,
        Shed: _shed,
    }

    @get("/login")
    async def login_page(
        self,
        request: Request,  # type: ignore[type-arg]
        db_engine: NamedDependency[AsyncEngine],
        settings: NamedDependency[Settings],
    ) -> Response[Any]:
        if await current_session(request, db_engine) is not None:
            return Redirect(PATH, status_code=303)
        return _login_page(settings)

    @post("/login")
    async def login(
        self,
        request: Request,  # type: ignore[type-arg]
        db_engine: NamedDependency[AsyncEngine],
        settings: NamedDependency[Settings],
    ) -> Response[Any]:
        form = await request.form()
        tenant, username = _field(form, "tenant"), _field(form, "username")
        if not csrf_matches(form, request.cookies.get(LOGIN_CSRF_COOKIE)):
            return _login_page(settings, status=403, error=CSRF_REFUSED, tenant=tenant, username=username)
        async with autocommit(db_engine) as conn:
            identity = await authenticate(conn, tenant, username, _field(form, "password"))
            if identity is None:
                return _login_page(settings, status=401, error=WRONG_LOGIN, tenant=tenant, username=username)
            token, _ = await start_session(conn, identity.agent_id, settings.console_session_ttl_s)
        # A new token at every sign-in: a token planted before it is worth nothing after.
        cookies = [session_cookie(settings, token), login_csrf_cookie(settings, None)]
        return Redirect(PATH, status_code=303, cookies=cookies)

    @post("/logout")
    async def logout(
        self,
        request: Request,  # type: ignore[type-arg]
        agent: NamedDependency[ConsoleSession],
        form: NamedDependency[FormMultiDict],  # asked for its CSRF check
        db_engine: NamedDependency[AsyncEngine],
        settings: NamedDependency[Settings],
    ) -> Response[Any]:
        async with autocommit(db_engine) as conn:
            await end_session(conn, request.cookies[SESSION_COOKIE])
        return Redirect(f"{PATH}/login", status_code=303, cookies=[session_cookie(settings, None)])

    @get("")
    async def search(
        self,
        agent: NamedDependency[ConsoleSession],
        db_engine: NamedDependency[AsyncEngine],
        q: FromQuery[str] = "",
    ) -> Response[Any]:
        term = q.strip()[:100]
        customers: list[CustomerMatch] = []
        if term:
            async with autocommit(db_engine) as conn:
                customers = await search_customers(conn, agent.identity.tenant_id, term)
        return _page("search.html", agent=agent, q=term, customers=customers, limit=SEARCH_LIMIT)

    @get("/accounts/{account_ref:str}")
    async def account(
        self,
        agent: NamedDependency[ConsoleSession],
        db_engine: NamedDependency[AsyncEngine],
        account_ref: FromPath[str],
    ) -> Response[Any]:
        return await _account_page(db_engine, agent, account_ref)

    @post("/accounts/{account_ref:str}/answers")
    async def ask(
        self,
        request: Request,  # type: ignore[type-arg]
        agent: NamedDependency[ConsoleSession],
        form: NamedDependency[FormMultiDict],
        answers: NamedDependency[AnswerService],
        account_ref: FromPath[str],
    ) -> Response[Any]:
        """Ask (or, with `regenerate`, ask the model again past the answer cache); then show the
        answer. Without JavaScript; the page's script streams through the route below instead."""
        try:
            data = _question(form, account_ref)
        except msgspec.ValidationError as exc:
            return await _account_page(answers.db, agent, account_ref, question=_field(form, "question"),
                                       locale=_field(form, "locale"), error=f"The question was not asked: {exc}.",
                                       status=400)  # fmt: skip
        events, audit_id = await _conversation(request, agent, form, answers, data)
        answer = await until_disconnect(request, final_answer(events))
        request_state(request.scope).setdefault("log_extra", {}).update(intent=answer.intent, source=answer.source)
        return Redirect(f"{PATH}/answers/{audit_id}", status_code=303)

    @post("/accounts/{account_ref:str}/answers/stream", status_code=200)
    async def ask_streaming(
        self,
        request: Request,  # type: ignore[type-arg]
        agent: NamedDependency[ConsoleSession],
        form: NamedDependency[FormMultiDict],
        answers: NamedDependency[AnswerService],
        account_ref: FromPath[str],
    ) -> ServerSentEvent:
        """The same, as Server-Sent Events (app/api/event_stream.py): the text as the model writes it,
        then an `answer_page` event with the audited answer's page."""
        try:
            data = _question(form, account_ref)
        except msgspec.ValidationError as exc:
            raise ValidationException(f"The question was not asked: {exc}.") from exc
        events, audit_id = await _conversation(request, agent, form, answers, data)
        page = msgspec.json.encode({"url": f"{PATH}/answers/{audit_id}"}).decode()
        return await event_stream(
            request, events, headers=_HEADERS, tail=[ServerSentEventMessage(page, event="answer_page")]
        )

    @get("/answers/{answer_id:str}")
    async def answer(
        self,
        agent: NamedDependency[ConsoleSession],
        db_engine: NamedDependency[AsyncEngine],
        answer_id: FromPath[str],
    ) -> Response[Any]:
        record = None
        try:
            key = uuid.UUID(answer_id)
        except ValueError:
            pass  # not an id at all: as unknown as any other
        else:
            async with autocommit(db_engine) as conn:
                record = await find_answer(conn, agent.identity.tenant_id, key)
        if record is None:
            raise NotFoundException(f"answer {answer_id!r} not found")
        return _page("answer.html", agent=agent, view=answer_view(record), locales=LOCALES)
