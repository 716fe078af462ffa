"""Liveness and readiness probes."""

from __future__ import annotations

from typing import Any

from litestar import Response, get
from litestar.di import NamedDependency
from litestar.status_codes import HTTP_503_SERVICE_UNAVAILABLE
from sqlalchemy import text

from app.answers.service import AnswerService
from app.api.openapi import READY_ROUTE
from app.data.database import autocommit
from app.errors import DatabaseUnavailable


@get("/health", sync_to_thread=False)
def health() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


@get("/ready", **READY_ROUTE)
async def ready(answers: NamedDependency[AnswerService]) -> Response[dict[str, Any]]:
    """The process can reach its database and its engine. Without the engine it still answers
    (deterministically), so that is reported but does not make the service unready."""
    body: dict[str, Any] = {"status": "ready", "database": "ok"}
    try:
        async with autocommit(answers.db) as conn:
            await conn.execute(text("SELECT 1"))
    except DatabaseUnavailable as exc:  # anything else is a bug: a 500, like on every route
        return Response(
            {"status": "unavailable", "database": "unavailable", "message": str(exc)},
            status_code=HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": str(exc.retry_after_s)},
        )
    llm = answers.llm
    body["engine"] = "off" if llm is None else ("ok" if await llm.health() else "unavailable")
    return Response(body)
