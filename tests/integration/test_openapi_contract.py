"""The OpenAPI document tells the truth: schemathesis generates requests from the live /schema for
every operation, sends them to the service under a real server with valid credentials, and checks
each answer against the document (status code, content type, body schema, headers) and that it is
never a server error."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import msgspec
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from app.api.app import create_app
from app.settings import Settings
from tests.factories import account, customer, document
from tests.servers import ThreadedServer

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]
OPERATIONS = {
    "GET /health",
    "GET /ready",
    "GET /metrics",
    "POST /v1/explanations",
    "POST /v1/explanations:batch",
    "GET /v1/jobs/{job_id}",
    "POST /v1/sessions",
    "POST /v1/chat",
    "GET /v1/chat/accounts",
}


class Live(msgspec.Struct, kw_only=True):
    url: str
    key: str
    token: str


@pytest.fixture
async def live(database_url: str, make_tenant: Any, load: Any) -> AsyncIterator[Live]:
    tenant = await make_tenant("interactive")
    await load(document(tenant.slug, [customer(accounts=[account("A-1"), account("A-2")])]))
    env = {"ENGINE": "off", "API_KEY_CACHE_TTL": "0", "BATCH_WORKER": "0", "SESSION_SECRET": "contract-secret"}
    server = ThreadedServer(create_app(Settings.from_env(env), database_url))
    try:
        async with httpx.AsyncClient(base_url=server.url) as client:
            r = await client.post(
                "/v1/sessions", json={"customer_ref": "C-1001"}, headers={"Authorization": f"Bearer {tenant.key}"}
            )
        assert r.status_code == 201, r.text
        yield Live(url=server.url, key=tenant.key, token=r.json()["token"])
    finally:
        server.stop()


def test_the_service_answers_as_its_openapi_document_says(live: Live) -> None:
    schema = schemathesis.openapi.from_url(f"{live.url}/schema/openapi.json")
    results = list(schema.get_all_operations())
    operations = [result.ok() for result in results if isinstance(result, Ok)]
    assert len(operations) == len(results)  # every operation in the document could be read
    assert {f"{op.method.upper()} {op.path}" for op in operations} == OPERATIONS
    for operation in operations:
        credential = live.token if operation.path.startswith("/v1/chat") else live.key
        headers = {"Authorization": f"Bearer {credential}"}
        _check(operation, live.url, headers, GenerationMode.POSITIVE)()
        if operation.method.upper() == "POST":  # bodies schemathesis makes invalid: documented 4xx, never a 5xx
            _check(operation, live.url, headers, GenerationMode.NEGATIVE)()


def _check(operation: Any, url: str, headers: dict[str, str], mode: GenerationMode) -> Callable[[], None]:
    @settings(max_examples=25, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(mode))
    def run(case: Any) -> None:
        case.call_and_validate(base_url=url, headers=headers, checks=CHECKS)

    return run
