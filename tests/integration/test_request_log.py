"""One structured log event per request; the API key and the question never appear in it."""

from __future__ import annotations

import json
import logging
from typing import Any

import asyncpg
from litestar.testing import AsyncTestClient
from structlog.testing import capture_logs

from app.api.app import create_app
from app.settings import Settings
from tests.factories import document
from tests.waiting import until

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
    assert (event["intent"], event["source"]) == ("out_of_scope", "fallback")  # it mentions a PIN
    assert {"auth", "db", "facts", "explain", "audit", "total"} <= event["timings_ms"].keys()
    assert tenant.key not in str(events)
    assert "4821" not in str(events)


async def test_the_question_is_logged_only_when_allowed(database_url: str, make_tenant: Any, load: Any) -> None:
    from litestar.testing import AsyncTestClient

    from app.api.app import create_app
    from app.settings import Settings

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


async def test_a_library_record_with_a_driver_error_is_written_not_lost(database_url: str, capfd: Any) -> None:
    """Records of the standard library's loggers (here asyncpg's, with the exception whose class
    Litestar's default renderer could not encode: PostgresMessageMeta) are written as JSON lines."""
    app = create_app(Settings.from_env({"ENGINE": "off", "BATCH_WORKER": "0"}), database_url)
    async with AsyncTestClient(app=app):
        try:
            raise asyncpg.ObjectNotInPrerequisiteStateError('database "bank" is not currently accepting connections')
        except asyncpg.PostgresError:
            logging.getLogger("asyncpg.pool").exception("connection failed", extra={"kind": asyncpg.PostgresError})

        seen: list[dict[str, Any]] = []

        def written() -> bool:  # the handler writes from a queue listener's thread
            lines = capfd.readouterr().err.splitlines()
            seen.extend(json.loads(line) for line in lines if '"connection failed"' in line)
            return bool(seen)

        await until("the record on stderr", written)
    [record] = seen
    assert (record["event"], record["level"]) == ("connection failed", "error")
    assert "is not currently accepting connections" in record["exception"]
    assert record["kind"] == "<class 'asyncpg.exceptions._base.PostgresError'>"
