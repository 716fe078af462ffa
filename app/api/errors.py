"""Every error is JSON, an ErrorBody: {"status", "error", "message", "details"?, "retry_after_s"?}, with a
message a caller can act on. The OpenAPI document describes errors with the same struct (app/api/openapi.py)."""

from __future__ import annotations

from typing import Any

import msgspec
import structlog
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.status_codes import (
    HTTP_404_NOT_FOUND,
    HTTP_422_UNPROCESSABLE_ENTITY,
    HTTP_500_INTERNAL_SERVER_ERROR,
    HTTP_503_SERVICE_UNAVAILABLE,
)

from app.answers.schemas import in_words
from app.api.body import MAX_BODY_BYTES
from app.api.disconnect import ClientGone
from app.errors import DatabaseUnavailable, NotFound, Shed, UnreadableData

log = structlog.get_logger("bill_assistant.errors")

_NAMES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    415: "unsupported_media_type",
    422: "unprocessable",
    429: "rate_limited",
    499: "client_closed_request",
    500: "internal_error",
    503: "unavailable",
}


class ErrorBody(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The body of every error response."""

    status: int  # the HTTP status again
    error: str  # a stable name for the kind of error: "bad_request", "rate_limited", ...
    message: str  # what is wrong, for a person
    details: list[Any] | None = None  # per-field validation errors, when there are some
    retry_after_s: int | None = None  # 429 and 503 from shedding: when to try again (also Retry-After)


def _body(status: int, message: str, details: Any = None) -> ErrorBody:
    return ErrorBody(status=status, error=_NAMES.get(status, "error"), message=message, details=details or None)


def http_error(request: Request, exc: HTTPException) -> Response[Any]:  # type: ignore[type-arg]
    if exc.status_code >= 500:
        return internal_error(request, exc)
    message = exc.detail
    details = exc.extra if isinstance(exc.extra, list) else None
    if isinstance(exc, ValidationException) and details:
        # Lead with what is wrong, not with Litestar's "Validation failed for POST /path".
        first = details[0]
        key = first.get("key") if isinstance(first, dict) else None
        text = first.get("message") if isinstance(first, dict) else str(first)
        message = f"{key}: {text}" if key else str(text)
        message = in_words(message)
    elif exc.status_code == 413:
        message = f"the request body is larger than {MAX_BODY_BYTES} bytes"
    return Response(_body(exc.status_code, message, details), status_code=exc.status_code, headers=exc.headers)


def shed(request: Request, exc: Shed) -> Response[Any]:  # type: ignore[type-arg]
    """429 (this tenant's rate) or 503 (overloaded, shutting down), always with Retry-After."""
    retry = int(exc.retry_after_s)
    body = ErrorBody(status=exc.status, error=exc.reason, message=str(exc), retry_after_s=retry)
    return Response(body, status_code=exc.status, headers={"Retry-After": str(retry)})


def client_gone(request: Request, exc: ClientGone) -> Response[Any]:  # type: ignore[type-arg]
    # Nobody reads this; the status (nginx's "client closed request") is for the request log.
    return Response(_body(499, "the client closed the connection"), status_code=499)


def not_found(request: Request, exc: NotFound) -> Response[Any]:  # type: ignore[type-arg]
    return Response(_body(HTTP_404_NOT_FOUND, str(exc)), status_code=HTTP_404_NOT_FOUND)


def database_unavailable(request: Request, exc: DatabaseUnavailable) -> Response[Any]:  # type: ignore[type-arg]
    """503 with Retry-After while the database cannot be reached; the cause is logged, not shown."""
    log.warning("database unavailable", route=request.scope.get("path_template"), cause=repr(exc.__cause__))
    body = ErrorBody(status=HTTP_503_SERVICE_UNAVAILABLE, error="database_unavailable", message=str(exc))
    headers = {"Retry-After": str(exc.retry_after_s)}
    return Response(body, status_code=HTTP_503_SERVICE_UNAVAILABLE, headers=headers)


def unreadable_data(request: Request, exc: UnreadableData) -> Response[Any]:  # type: ignore[type-arg]
    """422: this account's stored rows cannot be read; other accounts still answer."""
    log.warning("unreadable stored data", route=request.scope.get("path_template"), message=str(exc))
    body = ErrorBody(status=HTTP_422_UNPROCESSABLE_ENTITY, error="unreadable_data", message=str(exc))
    return Response(body, status_code=HTTP_422_UNPROCESSABLE_ENTITY)


def internal_error(request: Request, exc: Exception) -> Response[Any]:  # type: ignore[type-arg]
    log.exception("unhandled error", route=request.scope.get("path_template"))
    return Response(
        _body(HTTP_500_INTERNAL_SERVER_ERROR, "internal error; the request was not answered"),
        status_code=HTTP_500_INTERNAL_SERVER_ERROR,
    )


EXCEPTION_HANDLERS = {
    HTTPException: http_error,
    NotFound: not_found,
    Shed: shed,
    ClientGone: client_gone,
    DatabaseUnavailable: database_unavailable,
    UnreadableData: unreadable_data,
    Exception: internal_error,
}
