"""One structlog event per request (route, status, tenant, client address, stage timings; never a key
or a body), the Server-Timing header, and the per-stage latency histograms."""

from __future__ import annotations

from typing import Any

import structlog
from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from app.metrics import STAGE_SECONDS_BY
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


def client_address(scope: Scope) -> str | None:
    """The peer's address, or the client's as a trusted proxy reports it (uvicorn's proxy headers
    rewrite the scope before the app: FORWARDED_ALLOW_IPS)."""
    client = scope.get("client")
    return str(client[0]) if client else None


def server_timing(watch: Stopwatch) -> bytes:
    return ", ".join(f"{stage};dur={ms:.3f}" for stage, ms in watch.snapshot().items()).encode()


class RequestLogMiddleware(ASGIMiddleware):
    scopes = (ScopeType.HTTP,)

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        watch = stopwatch(scope)
        status = 500

        async def send_and_watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                # Server-Timing: the stages so far, readable in a browser's network panel.
                message["headers"] = [*message.get("headers", []), (b"server-timing", server_timing(watch))]
            await send(message)

        try:
            await next_app(scope, receive, send_and_watch)
        finally:
            state = request_state(scope)
            timings = watch.snapshot()
            tenant = state.get("tenant")
            log.info(
                "request",
                method=scope.get("method"),
                route=scope.get("path_template") or scope["path"],
                status=status,
                tenant=tenant,
                client=client_address(scope),
                timings_ms=timings,
                **state.get("log_extra", {}),
            )
            if tenant is not None:  # an authenticated request: its stages go to the histograms
                channel = state.get("channel", "none")
                for stage, ms in timings.items():
                    STAGE_SECONDS_BY(tenant, channel, stage).observe(ms / 1000)
