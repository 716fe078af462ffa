"""Customer sessions for the chat widget.

The bank's backend, holding the tenant's API key, asks `POST /v1/sessions` for a short-lived token
for one of its customers and hands it to the page. The token is signed (HMAC-SHA256 over the tenant,
the API key that asked for it, the customer and the expiry; app/security.py), and it can ask about
that customer's accounts and nothing else; the page never sees an API key. It lives no longer than
its key: revoking the key refuses its tokens within API_KEY_CACHE_TTL, as it refuses the key."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import msgspec
from litestar import Controller, Request, post
from litestar.di import NamedDependency, Provide
from litestar.exceptions import NotAuthorizedException
from litestar.params import JSONBody
from sqlalchemy.ext.asyncio import AsyncEngine

from app.answers.schemas import SessionOut, SessionRequest
from app.api.auth import provide_principal, shared
from app.api.body import json_body
from app.api.openapi import SESSION_ROUTE
from app.api.overload import classify
from app.api.request_log import request_state, stopwatch
from app.data.customers import customer_locale
from app.data.database import autocommit
from app.data.tenants import Principal, principal_for_key
from app.errors import InvalidToken, NotFound
from app.security import CustomerClaims, issue_token, read_token
from app.settings import Settings

_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="bill-assistant-chat"'}


class Customer(msgspec.Struct, frozen=True, kw_only=True):
    """A customer's widget: the tenant it belongs to, and whose accounts it may see."""

    principal: Principal
    customer_ref: str


async def provide_customer(request: Request) -> Customer:  # type: ignore[type-arg]
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise NotAuthorizedException("a session token is required: Authorization: Bearer <token>", headers=_CHALLENGE)
    key_cache, db_engine = shared(request)
    settings: Settings = request.app.state.settings
    with stopwatch(request.scope).stage("auth"):
        try:
            claims = read_token(settings.security.session_secret, token.strip())
        except (InvalidToken, ValueError, msgspec.DecodeError) as exc:
            message = str(exc) if isinstance(exc, InvalidToken) else "the session token is not valid"
            raise NotAuthorizedException(message, headers=_CHALLENGE) from exc
        # The issuing key still live, with the tenant's policy and limits: cached like an API key.
        cache_key = f"session:{claims.tenant_id}:{claims.key_id}"
        principal = key_cache.get(cache_key)
        if principal is None:
            async with autocommit(db_engine) as conn:
                principal = await principal_for_key(conn, claims.tenant_id, claims.key_id)
            if principal is None:
                raise NotAuthorizedException("the session token is not valid", headers=_CHALLENGE)
            key_cache.put(cache_key, principal)
    request_state(request.scope)["tenant"] = principal.tenant_slug
    return Customer(principal=principal, customer_ref=claims.customer_ref)


async def start_session(db: AsyncEngine, settings: Settings, principal: Principal, customer_ref: str) -> SessionOut:
    """A token for one customer, issued with (and dying with) the API key principal authenticated with."""
    if principal.key_id is None:
        raise ValueError("a customer session is issued with an API key")
    async with autocommit(db) as conn:
        locale = await customer_locale(conn, principal.tenant_id, customer_ref)
    if locale is None:
        raise NotFound(f"customer {customer_ref!r} not found")
    expires = int(time.time() + settings.security.session_ttl_s)
    claims = CustomerClaims(
        tenant_id=principal.tenant_id, key_id=principal.key_id, customer_ref=customer_ref, expires=expires
    )
    token = issue_token(settings.security.session_secret, claims)
    return SessionOut(
        token=token,
        expires_at=datetime.fromtimestamp(expires, UTC),
        customer_ref=customer_ref,
        locale=locale,
    )


class SessionController(Controller):
    path = "/v1/sessions"
    tags = ["chat"]  # noqa: RUF012
    dependencies = {"principal": Provide(provide_principal)}  # noqa: RUF012

    @post(
        "",
        status_code=201,
        before_request=json_body,
        summary="A short-lived chat token for one customer (called by the bank's backend)",
        **SESSION_ROUTE,
    )
    async def create(
        self,
        request: Request,  # type: ignore[type-arg]
        data: JSONBody[SessionRequest],
        principal: NamedDependency[Principal],
        db_engine: NamedDependency[AsyncEngine],
        settings: NamedDependency[Settings],
    ) -> SessionOut:
        # The bank's backend asks, but a customer who opened the chat waits for the token.
        classify(request.scope, principal.priority_class, "widget")
        return await start_session(db_engine, settings, principal, data.customer_ref)
