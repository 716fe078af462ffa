"""One structured log event per request; the API key and the question never appear in it."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import asyncpg
import httpx
from litestar.testing import AsyncTestClient
from structlog.testing import capture_logs

from app.api.app import create_app
from app.settings import Settings
from tests.factories import document
from tests.servers import ThreadedServer

SECRET_QUESTION = "Why is my bill higher? My PIN is 4821"


async def test_one_event_per_request_without_secrets(client: Any, make_tenant: Any, load: Any) -> None:
    tenant = await make_tenant()
    await load(document(tenant.slug))
    with capture_logs() as events:
        r = await client.post(
            "/v1/explanations",
            json={"account_ref": "A-1", "question": SECRET_QUESTION},
            headers={"Authorization": f"Bearer {tenant.key}"},
        )
    assert r.status_code == 200
    requests = [e for e in events if e.get("event") == "request"]
    assert len(requests) == 1
    event = requests[0]
    assert event["route"] == "/v1/explanations"
    assert event["status"] == 200
    assert event["tenant"] == tenant.slug
    # The bill question is answered; the PIN that came with it is data, never logged.
    assert (event["intent"], event["source"]) == ("bill_change", "fallback")
    assert {"auth", "db", "facts", "explain", "audit", "total"} <= event["timings_ms"].keys()
    assert tenant.key not in str(events)
    assert "4821" not in str(events)


async def test_the_question_is_logged_only_when_allowed(database_url: str, make_tenant: Any, load: Any) -> None:
    tenant = await make_tenant()
    await load(document(tenant.slug))
    app = create_app(Settings.from_env({"LOG_QUESTIONS": "1"}), database_url)
    async with AsyncTestClient(app=app) as debug_client:
        with capture_logs() as events:
            await debug_client.post(
                "/v1/explanations",
                json={"account_ref": "A-1", "question": SECRET_QUESTION},
                headers={"Authorization": f"Bearer {tenant.key}"},
            )
    assert [e["question"] for e in events if e.get("event") == "request"] == [SECRET_QUESTION]


def test_a_library_record_with_a_driver_error_is_written_not_lost(database_url: str) -> None:
    """Records of the standard library's loggers (here asyncpg's, with the exception whose class
    Litestar's default renderer could not encode: PostgresMessageMeta) are rendered as JSON lines by
    the handler the app sets up; httpx's per-request lines are left out."""
    create_app(Settings.from_env({"ENGINE": "off", "BATCH_WORKER": "0"}), database_url)
    [handler] = logging.getLogger().handlers
    try:
        raise asyncpg.ObjectNotInPrerequisiteStateError('database "bank" is not currently accepting connections')
    except asyncpg.PostgresError:
        logger = logging.getLogger("asyncpg.pool")
        record = logger.makeRecord(
            logger.name, logging.ERROR, __file__, 1, "connection failed", (), sys.exc_info(),
            extra={"kind": asyncpg.PostgresError},
        )  # fmt: skip
    written = json.loads(handler.format(record))
    assert (written["event"], written["level"]) == ("connection failed", "error")
    assert "is not currently accepting connections" in written["exception"]
    assert written["kind"] == "<class 'asyncpg.exceptions._base.PostgresError'>"
    assert not logging.getLogger("httpx").isEnabledFor(logging.INFO)


async def test_each_request_names_its_client_as_the_trusted_proxy_reports_it(database_url: str) -> None:
    """A peer's own address; from a trusted proxy (uvicorn's default: 127.0.0.1), the first hop from the
    right that is not one; from anyone else, X-Forwarded-For changes nothing."""
    server = ThreadedServer(create_app(Settings.from_env({"ENGINE": "off", "BATCH_WORKER": "0"}), database_url))
    sent = [("127.0.0.31", {}), ("127.0.0.1", {"X-Forwarded-For": "6.6.6.6, 127.0.0.32"}),
            ("127.0.0.33", {"X-Forwarded-For": "6.6.6.6"})]  # fmt: skip
    try:
        with capture_logs() as events:
            for address, headers in sent:
                transport = httpx.AsyncHTTPTransport(local_address=address)
                async with httpx.AsyncClient(base_url=server.url, transport=transport) as http:
                    assert (await http.get("/health", headers=headers)).status_code == 200
    finally:
        server.stop()
    logged = [e["client"] for e in events if e.get("event") == "request"]
    assert logged == ["127.0.0.31", "127.0.0.32", "127.0.0.33"]
