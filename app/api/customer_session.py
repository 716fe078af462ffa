"""Customer sessions for the chat widget.

The bank's backend, holding the tenant's API key, asks `POST /v1/sessions` for a short-lived token
for one of its customers and hands it to the page. The token is signed (HMAC-SHA256 over the tenant,
the customer and the expiry), so it needs no database look-up, and it can ask about that customer's
accounts and nothing else; the page never sees an API key."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from datetime import UTC, datetime

import msgspec
from litestar import Controller, Request, post
from litestar.di import NamedDependency, Provide
from litestar.exceptions import NotAuthorizedException
from litestar.params import JSONBody
from sqlalchemy.ext.asyncio import AsyncEngine

from app.answers.schemas import SessionOut, SessionRequest
from app.api.auth import KeyCache, provide_principal
from app.api.request_log import request_state, stopwatch
from app.data.customers import customer_locale
from app.data.database import autocommit
from app.data.tenants import Principal, principal_for
from app.errors import NotFound
from app.settings import Settings

_VERSION = "v1"
_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="bill-assistant-chat"'}


class CustomerClaims(msgspec.Struct, frozen=True):
    tenant_id: int
    customer_ref: str
    expires: int  # Unix seconds


class InvalidToken(ValueError):
    pass


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(data: str) -> bytes:
    return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))


def _sign(secret: str, payload: str) -> str:
    return _b64(hmac.new(secret.encode(), f"{_VERSION}.{payload}".encode(), hashlib.sha256).digest())


def issue_token(secret: str, claims: CustomerClaims) -> str:
    payload = _b64(msgspec.json.encode(claims))
    return f"{_VERSION}.{payload}.{_sign(secret, payload)}"


def read_token(secret: str, token: str, now: float | None = None) -> CustomerClaims:
    """The claims of a token this service signed and that has not expired; InvalidToken otherwise."""
    version, _, rest = token.partition(".")
    payload, _, signature = rest.partition(".")
    if version != _VERSION or not hmac.compare_digest(signature, _sign(secret, payload)):
        raise InvalidToken("the session token is not valid")
    claims = msgspec.json.decode(_unb64(payload), type=CustomerClaims)
    if claims.expires <= (time.time() if now is None else now):
        raise InvalidToken("the session has expired: ask the bank's page for a new one")
    return claims


class Customer(msgspec.Struct, frozen=True):
    """A customer's widget: the tenant it belongs to, and whose accounts it may see."""

    principal: Principal
    customer_ref: str


async def provide_customer(
    request: Request,  # type: ignore[type-arg]
    db_engine: NamedDependency[AsyncEngine],
    key_cache: NamedDependency[KeyCache],
    settings: NamedDependency[Settings],
) -> Customer:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise NotAuthorizedException("a session token is required: Authorization: Bearer <token>", headers=_CHALLENGE)
    with stopwatch(request.scope).stage("auth"):
        try:
            claims = read_token(settings.session_secret, token.strip())
        except (InvalidToken, ValueError, msgspec.DecodeError) as exc:
            message = str(exc) if isinstance(exc, InvalidToken) else "the session token is not valid"
            raise NotAuthorizedException(message, headers=_CHALLENGE) from exc
        # The tenant's policy and limits, cached like an API key's (a token names only the tenant).
        cache_key = f"tenant:{claims.tenant_id}"
        principal = key_cache.get(cache_key)
        if principal is None:
            async with autocommit(db_engine) as conn:
                principal = await principal_for(conn, claims.tenant_id)
            if principal is None:
                raise NotAuthorizedException("the session token is not valid", headers=_CHALLENGE)
            key_cache.put(cache_key, principal)
    request_state(request.scope)["tenant"] = principal.tenant_slug
    return Customer(principal, claims.customer_ref)


async def start_session(db: AsyncEngine, settings: Settings, principal: Principal, customer_ref: str) -> SessionOut:
    async with autocommit(db) as conn:
        locale = await customer_locale(conn, principal.tenant_id, customer_ref)
    if locale is None:
        raise NotFound(f"customer {customer_ref!r} not found")
    expires = int(time.time() + settings.session_ttl_s)
    token = issue_token(settings.session_secret, CustomerClaims(principal.tenant_id, customer_ref, expires))
    return SessionOut(
        token=token,
        expires_at=datetime.fromtimestamp(expires, UTC),
        customer_ref=customer_ref,
        locale=locale,  # type: ignore[arg-type]  # checked by the database
    )


class SessionController(Controller):
    path = "/v1/sessions"
    tags = ["chat"]  # noqa: RUF012
    dependencies = {"principal": Provide(provide_principal)}  # noqa: RUF012

    @post("", status_code=201, summary="A short-lived chat token for one customer (called by the bank's backend)")
    async def create(
        self,
        data: JSONBody[SessionRequest],
        principal: NamedDependency[Principal],
        db_engine: NamedDependency[AsyncEngine],
        settings: NamedDependency[Settings],
    ) -> SessionOut:
        return await start_session(db_engine, settings, principal, data.customer_ref)
