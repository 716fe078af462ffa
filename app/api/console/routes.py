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
import structlog
from litestar import Controller, Request, Response, get, post
from litestar.datastructures import FormMultiDict
from litestar.di import NamedDependency, Provide
from litestar.exceptions import ValidationException
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect, ServerSentEvent, ServerSentEventMessage
from sqlalchemy.ext.asyncio import AsyncEngine

from app.answers.messages import Ask, ChatEvent, final_answer
from app.answers.schemas import ExplanationRequest
from app.api.body import form_body, refuse_control_characters
from app.api.console.conversation_views import cached_from
from app.api.console.forms import field, form_csrf_matches, provide_form, question_request
from app.api.console.pages import EXCEPTION_HANDLERS, SECURITY_HEADERS, account_page, console_page, sign_in_page
from app.api.console.session import (
    LOGIN_CSRF_COOKIE,
    PATH,
    SESSION_COOKIE,
    current_session,
    login_csrf_cookie,
    provide_agent,
    session_cookie,
)
from app.api.console.views import answer_view, reason_words
from app.api.console.words import LANGUAGES, words
from app.api.deps import answer_service
from app.api.disconnect import until_disconnect
from app.api.event_stream import event_stream
from app.api.overload import classify
from app.api.request_log import client_address, request_state, stopwatch
from app.data.agents import ConsoleSession, end_session, sign_in, start_session
from app.data.audit import find_answer
from app.data.database import autocommit
from app.data.directory import SEARCH_LIMIT, CustomerMatch, search_customers
from app.data.signin import SigninLimits, account_key
from app.errors import NotFound
from app.settings import Settings

log = structlog.get_logger("bill_assistant.console")


def signin_limits(settings: Settings) -> SigninLimits:
    return SigninLimits(
        max_failures=settings.security.signin_max_failures,
        backoff_s=settings.security.signin_backoff_s,
        backoff_max_s=settings.security.signin_backoff_max_s,
        client_attempts=settings.security.signin_client_attempts,
        client_window_s=settings.security.signin_client_window_s,
    )


async def _conversation(
    request: Request,  # type: ignore[type-arg]
    agent: ConsoleSession,
    form: FormMultiDict,
    data: ExplanationRequest,
) -> tuple[AsyncIterator[ChatEvent], uuid.UUID]:
    """The question asked at console priority, and the id its audit row will have (the answer page
    links to the row: a cache hit answers with the original answer's id)."""
    answers = answer_service(request)
    principal = await answers.tenant(agent.identity.tenant_id)
    assert principal is not None  # a live session's agent belongs to an existing tenant
    classify(request.scope, principal.priority_class, "console")
    if answers.settings.logs.questions:
        request_state(request.scope)["log_extra"] = {"question": data.question}
    ask = Ask(
        principal=principal,
        request=data,
        channel="console",
        today=date.today(),
        stopwatch=stopwatch(request.scope),
        use_cache=field(form, "regenerate") != "1",
    )
    return answers.converse(ask), ask.audit_id


class ConsoleController(Controller):
    path = PATH
    include_in_schema = False
    dependencies = {"agent": Provide(provide_agent), "form": Provide(provide_form)}  # noqa: RUF012
    exception_handlers = EXCEPTION_HANDLERS

    @get("/login")
    async def login_page(
        self,
        request: Request,  # type: ignore[type-arg]
        db_engine: NamedDependency[AsyncEngine],
        settings: NamedDependency[Settings],
    ) -> Response[Any]:
        if await current_session(request, db_engine) is not None:
            return Redirect(PATH, status_code=303)
        return sign_in_page(settings)

    @post("/login")
    async def login(
        self,
        request: Request,  # type: ignore[type-arg]
        db_engine: NamedDependency[AsyncEngine],
        settings: NamedDependency[Settings],
    ) -> Response[Any]:
        form = await form_body(request)
        tenant, username = field(form, "tenant"), field(form, "username")
        refuse_control_characters("tenant", tenant)
        refuse_control_characters("username", username)
        if not form_csrf_matches(form, request.cookies.get(LOGIN_CSRF_COOKIE)):
            return sign_in_page(settings, status=403, error=words()["errors"]["csrf"], tenant=tenant, username=username)
        client = client_address(request.scope) or "unknown"
        async with autocommit(db_engine) as conn:
            identity, outcome = await sign_in(
                conn, tenant, username, field(form, "password"), client=client, limits=signin_limits(settings)
            )
            # Every attempt, for the bank's security review: who (the username only as its throttle
            # digest, never typed text in clear), from where (as the trusted proxy reports it), and how it ended.
            log.info(
                "console_signin",
                outcome=outcome,
                tenant=tenant.strip()[:64],
                account=account_key(tenant, username),
                agent_id=identity.agent_id if identity is not None else None,
                client=client,
            )
            if identity is None:
                return sign_in_page(
                    settings, status=401, error=words()["errors"]["wrong_login"], tenant=tenant, username=username
                )
            token, _ = await start_session(conn, identity.agent_id, settings.security.console_session_ttl_s)
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
        refuse_control_characters("q", q)
        term = q.strip()[:100]
        customers: list[CustomerMatch] = []
        if term:
            async with autocommit(db_engine) as conn:
                customers = await search_customers(conn, agent.identity.tenant_id, term)
        return console_page("search.html", agent=agent, q=term, customers=customers, limit=SEARCH_LIMIT)

    @get("/accounts/{account_ref:str}")
    async def account(
        self,
        agent: NamedDependency[ConsoleSession],
        db_engine: NamedDependency[AsyncEngine],
        account_ref: FromPath[str],
    ) -> Response[Any]:
        refuse_control_characters("account_ref", account_ref)
        return await account_page(db_engine, agent, account_ref)

    @post("/accounts/{account_ref:str}/answers")
    async def ask(
        self,
        request: Request,  # type: ignore[type-arg]
        agent: NamedDependency[ConsoleSession],
        form: NamedDependency[FormMultiDict],
        account_ref: FromPath[str],
    ) -> Response[Any]:
        """Ask (or, with `regenerate`, ask the model again past the answer cache); then show the
        answer. Without JavaScript; the page's script streams through the route below instead."""
        refuse_control_characters("account_ref", account_ref)
        try:
            data = question_request(form, account_ref)
        except msgspec.ValidationError:
            return await account_page(
                answer_service(request).db,
                agent,
                account_ref,
                question=field(form, "question"),
                locale=field(form, "locale"),
                error=words()["errors"]["question"],  # msgspec's reason is the API's, in English
                status=400,
            )
        events, audit_id = await _conversation(request, agent, form, data)
        answer = await until_disconnect(request, final_answer(events))
        request_state(request.scope).setdefault("log_extra", {}).update(intent=answer.intent, source=answer.source)
        return Redirect(f"{PATH}/answers/{audit_id}", status_code=303)

    @post("/accounts/{account_ref:str}/answers/stream", status_code=200)
    async def ask_streaming(
        self,
        request: Request,  # type: ignore[type-arg]
        agent: NamedDependency[ConsoleSession],
        form: NamedDependency[FormMultiDict],
        account_ref: FromPath[str],
    ) -> ServerSentEvent:
        """The same, as Server-Sent Events (app/api/event_stream.py): the text as the model writes it,
        then an `answer_page` event with the audited answer's page."""
        refuse_control_characters("account_ref", account_ref)
        try:
            data = question_request(form, account_ref)
        except msgspec.ValidationError as exc:
            raise ValidationException(f"The question was not asked: {exc}.") from exc
        events, audit_id = await _conversation(request, agent, form, data)
        page = msgspec.json.encode({"url": f"{PATH}/answers/{audit_id}"}).decode()
        return await event_stream(
            request,
            events,
            headers=SECURITY_HEADERS,
            tail=[ServerSentEventMessage(page, event="answer_page")],
            why=reason_words,
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
            raise NotFound(f"answer {answer_id!r} not found")
        view = answer_view(record)
        return console_page("answer.html", agent=agent, view=view, canonical=cached_from(record), locales=LANGUAGES)
