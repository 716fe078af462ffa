"""Bearer API keys: the tenant comes from the credential, never from the request body."""

from __future__ import annotations

from litestar import Request
from litestar.di import NamedDependency
from litestar.exceptions import NotAuthorizedException
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.request_log import request_state, stopwatch
from app.data.database import autocommit
from app.data.tenants import Principal, authenticate

_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="bill-assistant"'}


async def provide_principal(request: Request, db_engine: NamedDependency[AsyncEngine]) -> Principal:  # type: ignore[type-arg]
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise NotAuthorizedException("an API key is required: Authorization: Bearer <key>", headers=_CHALLENGE)
    with stopwatch(request.scope).stage("auth"):
        async with autocommit(db_engine) as conn:
            principal = await authenticate(conn, key.strip())
    if principal is None:
        raise NotAuthorizedException("the API key is not valid", headers=_CHALLENGE)
    request_state(request.scope)["tenant"] = principal.tenant_slug
    return principal
