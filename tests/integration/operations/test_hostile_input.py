"""Hostile input never gets a 5xx: NUL and control characters in refs, malformed, invalid-UTF-8 and
deeply nested bodies, wrong content types and oversized bodies are answered 400/413/415/422 in the
documented error shape, on every JSON route and the console's forms."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from litestar.testing import AsyncTestClient

from app.api.app import create_app
from app.api.body import MAX_BODY_BYTES, MAX_DEPTH
from app.settings import Settings
from tests.console import PASSWORD, csrf_of, signed_in

Client = AsyncTestClient[Any]
JSON = {"Content-Type": "application/json"}
ROUTES = ["/v1/explanations", "/v1/explanations:batch", "/v1/sessions", "/v1/chat"]
EXAMPLES = 60
TOO_DEEP = f"the request body nests deeper than {MAX_DEPTH} levels"


@pytest.fixture
async def app_client(database_url: str) -> AsyncIterator[Client]:
    settings = Settings.from_env({"ENGINE": "off", "COOKIE_SECURE": "0", "BATCH_WORKER": "0"})
    async with AsyncTestClient(app=create_app(settings, database_url)) as client:
        yield client


async def _chat_token(client: Client, bank: Any) -> str:
    r = await client.post("/v1/sessions", json={"customer_ref": "C-1001"}, headers=_bearer(bank.key))
    assert r.status_code == 201, r.text
    token: str = r.json()["token"]
    return token


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def _auth(client: Client, bank: Any, route: str) -> dict[str, str]:
    return _bearer(await _chat_token(client, bank) if route == "/v1/chat" else bank.key)


def _body_for(route: str, ref: str) -> dict[str, Any]:
    if route == "/v1/sessions":
        return {"customer_ref": ref}
    if route == "/v1/explanations:batch":
        return {"items": [{"account_ref": ref}]}
    return {"account_ref": ref, "question": "Why is my bill higher?"}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("ref", ["A\x00", "A-1\n", "\x07", "A\x9b1"])
async def test_a_control_character_in_a_ref_is_a_400_naming_the_field(
    app_client: Client, bank: Any, route: str, ref: str
) -> None:
    r = await app_client.post(route, json=_body_for(route, ref), headers=await _auth(app_client, bank, route))
    field = {"/v1/sessions": "customer_ref", "/v1/explanations:batch": "items[0].account_ref"}.get(route, "account_ref")
    assert r.status_code == 400, r.text
    assert r.json()["error"] == "bad_request"
    assert r.json()["message"] == f"{field}: Expected `str` without control characters"


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"[" * 100_000 + b"]" * 100_000, TOO_DEEP),
        (b'{"a":' * (MAX_DEPTH + 1) + b"1" + b"}" * (MAX_DEPTH + 1), TOO_DEEP),
        (b'{"account_ref": "\xff\xfe", "question": "why?"}', "the request body is not valid UTF-8"),
        (b'{"account_ref": ', "the request body is not valid JSON: Input data was truncated"),
    ],
)  # fmt: skip
async def test_a_bad_json_body_is_a_400_with_a_message(
    app_client: Client, bank: Any, route: str, body: bytes, message: str
) -> None:
    r = await app_client.post(route, content=body, headers=JSON | await _auth(app_client, bank, route))
    assert r.status_code == 400, r.text
    assert r.json() == {"status": 400, "error": "bad_request", "message": message}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    ("content_type", "named"),
    [(None, "no Content-Type"), ("text/plain", "Content-Type 'text/plain'"),
     ("application/x-www-form-urlencoded", "Content-Type 'application/x-www-form-urlencoded'")],
)  # fmt: skip
async def test_a_json_route_refuses_another_content_type_with_415(
    app_client: Client, bank: Any, route: str, content_type: str | None, named: str
) -> None:
    headers = await _auth(app_client, bank, route) | ({"Content-Type": content_type} if content_type else {})
    r = await app_client.post(route, content=b'{"account_ref": "A-1"}', headers=headers)
    assert r.status_code == 415, r.text
    assert r.json() == {
        "status": 415,
        "error": "unsupported_media_type",
        "message": f"this route takes a JSON body sent as Content-Type: application/json, not {named}",
    }


async def test_a_charset_parameter_is_accepted(app_client: Client, bank: Any) -> None:
    r = await app_client.post(
        "/v1/explanations",
        content=b'{"account_ref": "A-1", "question": "Why is my bill higher?", "as_of": "2026-11-10"}',
        headers={"Content-Type": "application/json; charset=utf-8"} | _bearer(bank.key),
    )
    assert r.status_code == 200, r.text


async def test_an_oversized_body_is_a_413(app_client: Client, bank: Any) -> None:
    body = b'{"account_ref": "' + b"a" * MAX_BODY_BYTES + b'"}'
    r = await app_client.post("/v1/explanations", content=body, headers=JSON | _bearer(bank.key))
    assert r.status_code == 413, r.text
    assert r.json() == {
        "status": 413,
        "error": "too_large",
        "message": f"the request body is larger than {MAX_BODY_BYTES} bytes",
    }


# The console's page for them, in its words (the log keeps the service's reason, naming the field).
REFUSED = "Refused: what was sent, or the page&#39;s address, holds characters the console does not accept"


@pytest.mark.bank(agents=("ana",))
async def test_the_console_refuses_control_characters_in_the_search_and_the_account_path(
    app_client: Client, bank: Any
) -> None:
    csrf = await signed_in(app_client, bank.slug)
    r = await app_client.get("/console?q=a%00b")
    assert r.status_code == 400
    assert REFUSED in r.text
    r = await app_client.get("/console/accounts/A%00")
    assert r.status_code == 400
    assert REFUSED in r.text
    r = await app_client.post(
        "/console/accounts/A%00/answers", data={"csrf_token": csrf, "question": "Why?"}, follow_redirects=False
    )
    assert r.status_code == 400
    assert REFUSED in r.text


@pytest.mark.bank(agents=("ana",))
async def test_the_console_sign_in_refuses_control_characters_in_the_bank_and_the_username(
    app_client: Client, bank: Any
) -> None:
    for field, value in (("tenant", "bank\x00"), ("username", "an\x00a")):
        form = await app_client.get("/console/login")
        data = {"csrf_token": csrf_of(form), "tenant": bank.slug, "username": "ana", "password": PASSWORD}
        r = await app_client.post("/console/login", data=data | {field: value}, follow_redirects=False)
        assert r.status_code == 400
        assert REFUSED in r.text


# The properties: arbitrary text (NUL and every control character included), arbitrary JSON shapes
# and content types never get a 5xx. Hypothesis draws the inputs (a bounded number per route); the
# requests are then sent through the app, each failure naming its input.
TEXT = st.text(st.characters(codec="utf-8"), max_size=80) | st.sampled_from(["A-1", "C-1001", "A\x00", "\x00"])
LEAVES = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT
SHAPES = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4))
FIELDS = st.sampled_from(["account_ref", "customer_ref", "question", "as_of", "locale", "items", "channel"])
OBJECTS = st.dictionaries(FIELDS, SHAPES, max_size=4)
ITEMS = st.builds(lambda item: {"items": [item]}, OBJECTS)
CONTENT_TYPES = st.sampled_from(
    ["application/json", "application/json; charset=utf-8", "text/plain", "", "application/xml"]
)


def _draw(strategy: st.SearchStrategy[Any]) -> list[Any]:
    drawn: list[Any] = []

    @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(value: Any) -> None:
        drawn.append(value)

    collect()
    return drawn


@pytest.mark.parametrize("route", ROUTES)
async def test_no_json_body_or_content_type_gets_a_5xx(app_client: Client, bank: Any, route: str) -> None:
    headers = await _auth(app_client, bank, route)
    for body, content_type in _draw(st.tuples(OBJECTS | ITEMS | SHAPES, CONTENT_TYPES)):
        sent = headers | ({"Content-Type": content_type} if content_type else {})
        r = await app_client.post(route, json=body, headers=sent) if content_type == "application/json" else (
            await app_client.post(route, content=_encode(body), headers=sent))  # fmt: skip
        assert r.status_code < 500, (body, content_type, r.text)
        if r.status_code >= 400:
            assert r.json()["status"] == r.status_code, (body, r.text)
            assert {"status", "error", "message"} <= r.json().keys(), (body, r.text)


def _encode(value: Any) -> bytes:
    return json.dumps(value).encode("utf-8", "surrogatepass")


@pytest.mark.bank(agents=("ana",))
async def test_no_console_input_gets_a_5xx(app_client: Client, bank: Any) -> None:
    csrf = await signed_in(app_client, bank.slug)
    for q, ref, question, locale in _draw(st.tuples(TEXT, TEXT, TEXT, TEXT)):
        r = await app_client.get("/console", params={"q": q})
        assert r.status_code < 500, (q, r.text)
        path_ref = quote(ref, safe="") or "A-1"
        r = await app_client.get(f"/console/accounts/{path_ref}")
        assert r.status_code < 500, (ref, r.text)
        r = await app_client.post(
            f"/console/accounts/{path_ref}/answers",
            data={"csrf_token": csrf, "question": question, "locale": locale},
            follow_redirects=False,
        )
        assert r.status_code < 500, (ref, question, locale, r.text)
