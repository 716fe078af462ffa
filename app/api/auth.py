"""Bearer API keys: the tenant comes from the credential, never from the request body."""

from __future__ import annotations

import time

from litestar import Request
from litestar.exceptions import NotAuthorizedException
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.request_log import request_state, stopwatch
from app.data.database import autocommit
from app.data.tenants import Principal, authenticate

_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="bill-assistant"'}


class KeyCache:
    """Valid keys seen in the last `ttl` seconds, so most requests skip the look-up round trip.
    A revoked key stops working within `ttl`. Unknown keys are never cached, so guessing cannot
    fill it; it is cleared whole when it reaches `size`."""

    def __init__(self, ttl: float, size: int = 10_000) -> None:
        self.ttl, self.size = ttl, size
        self._entries: dict[str, tuple[Principal, float]] = {}

    def get(self, key: str) -> Principal | None:
        entry = self._entries.get(key)
        if entry is None or entry[1] < time.monotonic():
            return None
        return entry[0]

    def put(self, key: str, principal: Principal) -> None:
        if self.ttl <= 0:
            return
        if len(self._entries) >= self.size:
            self._entries.clear()
        self._entries[key] = (principal, time.monotonic() + self.ttl)


def shared(request: Request) -> tuple[KeyCache, AsyncEngine]:  # type: ignore[type-arg]
    """The process's key cache and database engine, from the app's state rather than as dependencies:
    Litestar resolves two or more dependencies of one level concurrently, a task each in an anyio
    task group, which costs the hot routes ~0.2 ms of CPU per request for two dictionary look-ups."""
    state = request.app.state
    return state.key_cache, state.db_config.get_engine()


async def provide_principal(request: Request) -> Principal:  # type: ignore[type-arg]
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    key = key.strip()
    if scheme.lower() != "bearer" or not key:
        raise NotAuthorizedException("an API key is required: Authorization: Bearer <key>", headers=_CHALLENGE)
    key_cache, db_engine = shared(request)
    with stopwatch(request.scope).stage("auth"):
        principal = key_cache.get(key)
        if principal is None:
            async with autocommit(db_engine) as conn:
                principal = await authenticate(conn, key)
            if principal is not None:
                key_cache.put(key, principal)
    if principal is None:
        raise NotAuthorizedException("the API key is not valid", headers=_CHALLENGE)
    request_state(request.scope)["tenant"] = principal.tenant_slug
    return principal
