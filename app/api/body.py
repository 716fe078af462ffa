"""What every JSON route asks of a request before its handler sees it, and the checks of refs that
arrive outside a JSON body (path and query parameters).

`json_body`, each JSON route's `before_request` hook (it runs before the dependencies, as a guard
would, without the copy of the route handler Litestar makes for each guard call): the body must be
sent as `Content-Type: application/json` (415 otherwise), valid UTF-8 and well-formed JSON no deeper
than MAX_DEPTH (400 otherwise, with a message). The body is decoded once here and handed on to
Litestar, which would otherwise turn an invalid byte (UnicodeDecodeError) or a 100,000-deep nesting
(RecursionError) into a 500. Bodies over MAX_BODY_BYTES are refused with 413 by Litestar itself
(`request_max_body_size`, app/api/app.py).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl

import msgspec
from litestar import Request
from litestar.datastructures import FormMultiDict
from litestar.exceptions import ClientException, ValidationException
from litestar.status_codes import HTTP_415_UNSUPPORTED_MEDIA_TYPE
from litestar.utils.scope.state import ScopeState

# A batch of 1,000 items with 1,000-character questions is about 1 MB (up to 3 MB in scripts that
# take 3 bytes a character); nothing a caller may send is larger.
MAX_BODY_BYTES = 4 * 1024 * 1024
# The deepest request body any route takes is 3 levels ({"items": [{...}]}); 32 leaves room.
MAX_DEPTH = 32

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _depth(value: Any) -> int:
    """How deep a decoded body nests (iteratively: a deep body must not exhaust the stack here)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level)
            if level <= MAX_DEPTH:  # past the limit, how much deeper does not matter
                stack.extend((child, level + 1) for child in item)
    return deepest


def decode_json_body(body: bytes) -> Any:
    """The body as JSON; ValidationException (400) naming what is wrong with it."""
    try:
        value = msgspec.json.decode(body or b"null")
    except UnicodeDecodeError:
        raise ValidationException("the request body is not valid UTF-8") from None
    except RecursionError:
        raise ValidationException(f"the request body nests deeper than {MAX_DEPTH} levels") from None
    except msgspec.DecodeError as exc:
        raise ValidationException(f"the request body is not valid JSON: {exc}") from None
    if _depth(value) > MAX_DEPTH:
        raise ValidationException(f"the request body nests deeper than {MAX_DEPTH} levels")
    return value


async def json_body(request: Request[Any, Any, Any]) -> None:
    """Before the handler of a route that takes a JSON body."""
    media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media_type != "application/json":
        sent = f"Content-Type {media_type!r}" if media_type else "no Content-Type"
        raise ClientException(
            f"this route takes a JSON body sent as Content-Type: application/json, not {sent}",
            status_code=HTTP_415_UNSUPPORTED_MEDIA_TYPE,
        )
    value = decode_json_body(await request.body())
    # What Request.json() would have decoded (no type decoders are configured): kept, not decoded again.
    ScopeState.from_scope(request.scope).json = value


def refuse_control_characters(name: str, value: str) -> None:
    """A ref or search term from a path or query parameter: no control character, NUL above all,
    which Postgres cannot hold in text (400 naming the parameter)."""
    if _CONTROL.search(value):
        raise ValidationException(f"{name}: must not contain control characters")


async def form_body(request: Request[Any, Any, Any]) -> FormMultiDict:
    """A console form's fields; ValidationException (400) when one is not UTF-8. Litestar would put
    U+FFFD in place of a bad byte of a urlencoded form (stored, shown as if the agent wrote it) and
    fail with a 500 on one in a multipart part."""
    try:
        if request.content_type[0] == "application/x-www-form-urlencoded":
            parse_qsl((await request.body()).decode("latin-1"), keep_blank_values=True, errors="strict")
        return await request.form()
    except UnicodeDecodeError:
        raise ValidationException("the form is not valid UTF-8") from None
