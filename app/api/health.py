"""Liveness and readiness probes."""

from __future__ import annotations

from typing import Any

from litestar import Response, get
from litestar.di import NamedDependency
from litestar.status_codes import HTTP_503_SERVICE_UNAVAILABLE
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.data.database import autocommit


@get("/health", sync_to_thread=False)
def health() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


@get("/ready")
async def ready(db_engine: NamedDependency[AsyncEngine]) -> Response[dict[str, Any]]:
    """The process can reach its database."""
    try:
        async with autocommit(db_engine) as conn:
            await conn.execute(text("SELECT 1"))
    except Exception as exc:  # any failure means not ready; say which
        return Response(
            {"status": "unavailable", "database": type(exc).__name__},
            status_code=HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": "5"},
        )
    return Response({"status": "ready", "database": "ok"})
