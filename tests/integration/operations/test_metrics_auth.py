"""GET /metrics: behind METRICS_TOKEN when it is set, open when it is not."""

from __future__ import annotations

from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from app.api.app import create_app
from app.settings import Settings

TOKEN = "metrics-secret-123"
REFUSED = {
    "status": 401,
    "error": "unauthorized",
    "message": "the metrics token is required: Authorization: Bearer <METRICS_TOKEN>",
}


def metrics_client(database_url: str, **env: str) -> AsyncTestClient[Any]:
    return AsyncTestClient(app=create_app(Settings.from_env({"ENGINE": "off", **env}), database_url))


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong-token"},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": "Bearer "},
    ],
    ids=["none", "wrong", "longer", "not-bearer", "empty"],
)
async def test_metrics_refuse_a_missing_or_wrong_token(database_url: str, headers: dict[str, str]) -> None:
    async with metrics_client(database_url, METRICS_TOKEN=TOKEN) as client:
        r = await client.get("/metrics", headers=headers)
    assert r.status_code == 401
    assert r.json() == REFUSED
    assert r.headers["www-authenticate"] == 'Bearer realm="bill-assistant-metrics"'


async def test_metrics_are_served_with_the_token(database_url: str) -> None:
    async with metrics_client(database_url, METRICS_TOKEN=TOKEN) as client:
        r = await client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    assert "bill_assistant_" in r.text


async def test_metrics_are_open_without_a_token_set(database_url: str) -> None:
    async with metrics_client(database_url) as client:
        r = await client.get("/metrics")
    assert r.status_code == 200
    assert "bill_assistant_" in r.text
