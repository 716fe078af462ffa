"""Liveness and readiness probes."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, get
from litestar.status_codes import HTTP_503_SERVICE_UNAVAILABLE

from app.api.deps import answer_service
from app.api.openapi import READY_ROUTE
from app.data.database import READ_ONLY_MESSAGE, autocommit, read_only
from app.errors import DatabaseUnavailable


def _unready(database: str, exc: DatabaseUnavailable) -> Response[dict[str, Any]]:
    return Response(
        {"status": "unavailable", "database": database, "message": str(exc)},
        status_code=HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Retry-After": str(exc.retry_after_s)},
    )


@get("/health", sync_to_thread=False)
def health() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


@get("/ready", **READY_ROUTE)
async def ready(request: Request) -> Response[dict[str, Any]]:  # type: ignore[type-arg]
    """The process can reach its database and its engine. Without the engine it still answers
    (deterministically), so that is reported but does not make the service unready."""
    answers = answer_service(request)
    body: dict[str, Any] = {"status": "ready", "database": "ok"}
    try:
        async with autocommit(answers.db) as conn:
            # "on" on a standby after a failover (or a database set read-only): no answer could be
            # audited, so no request could be answered.
            standby = await read_only(conn)
    except DatabaseUnavailable as exc:  # anything else is a bug: a 500, like on every route
        return _unready("unavailable", exc)
    if standby:
        return _unready("read_only", DatabaseUnavailable(READ_ONLY_MESSAGE))
    llm = answers.llm
    body["engine"] = "off" if llm is None else ("ok" if await llm.health() else "unavailable")
    return Response(body)
