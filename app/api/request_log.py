"""One structlog event per request: route, status, tenant, stage timings. Never a key or a body."""

from __future__ import annotations

from typing import Any

import structlog
from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from app.timing import Stopwatch

log = structlog.get_logger("bill_assistant.request")


def request_state(scope: Scope) -> dict[str, Any]:
    return scope.setdefault("state", {})


def stopwatch(scope: Scope) -> Stopwatch:
    """The request's stopwatch, started when the request arrived."""
    state = request_state(scope)
    if "stopwatch" not in state:
        state["stopwatch"] = Stopwatch()
    watch: Stopwatch = state["stopwatch"]
    return watch


class RequestLogMiddleware(ASGIMiddleware):
    scopes = (ScopeType.HTTP,)

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        watch = stopwatch(scope)
        status = 500

        async def send_and_watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await next_app(scope, receive, send_and_watch)
        finally:
            state = request_state(scope)
            log.info(
                "request",
                method=scope.get("method"),
                route=scope.get("path_template") or scope["path"],
                status=status,
                tenant=state.get("tenant"),
                timings_ms=watch.snapshot(),
                **state.get("log_extra", {}),
            )
