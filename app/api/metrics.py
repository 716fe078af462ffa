"""GET /metrics: Prometheus's scrape, behind a bearer token when METRICS_TOKEN is set.

Unset, it is open (the development defaults); production sets it, and so does the scraper
(`authorization: {credentials: ...}` in its scrape config)."""

from __future__ import annotations

from typing import Any

from litestar import MediaType, Response, get
from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException
from litestar.handlers.base import BaseRouteHandler
from litestar.plugins.prometheus import PrometheusController

from app.api.openapi import METRICS_ROUTE
from app.security import token_matches
from app.settings import Settings

_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="bill-assistant-metrics"'}


def require_metrics_token(connection: ASGIConnection, _handler: BaseRouteHandler) -> None:  # type: ignore[type-arg]
    settings: Settings = connection.app.state.settings
    if settings.security.metrics_token is None:
        return
    scheme, _, token = connection.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token_matches(token.strip(), settings.security.metrics_token):
        raise NotAuthorizedException(
            "the metrics token is required: Authorization: Bearer <METRICS_TOKEN>", headers=_CHALLENGE
        )


class MetricsController(PrometheusController):
    guards = [require_metrics_token]  # noqa: RUF012

    @get(media_type=MediaType.TEXT, summary="Prometheus metrics (text exposition format)", **METRICS_ROUTE)
    async def get(self) -> Response[Any]:
        """Litestar's scrape, documented as what it is: text, behind the metrics token."""
        response: Response[Any] = await PrometheusController.get.fn(self)
        return response
