"""The real embedded model (SmolLM2-135M, llama.cpp) behind /v1/explanations. Its prose is poor, so
a served answer is either a validated model answer or the deterministic one; the numbers never vary."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.app import create_app
from app.settings import Settings
from tests.factories import account, customer, document

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
async def model_client(database_url: str) -> AsyncIterator[AsyncTestClient[Any]]:
    settings = Settings.from_env({"ENGINE": "embedded", "ENGINE_TIMEOUT_S": "30", "ANSWER_CACHE_FILL": "0"})
    async with AsyncTestClient(app=create_app(settings, database_url)) as client:
        yield client


async def test_model_answers_are_validated_or_replaced(
    model_client: Any, make_tenant: Any, load: Any, engine: AsyncEngine
) -> None:
    tenant = await make_tenant()
    await load(document(tenant.slug, [customer(), customer("C-2", "zh-CN", [account("A-2", "CNY")])]))
    headers = {"Authorization": f"Bearer {tenant.key}"}
    answers = []
    for ref, question in [
        ("A-1", "Why is my bill higher than last month?"),
        ("A-1", "Why is my bill 12.00 higher?"),
        ("A-2", "为什么这个月账单多了？"),
    ]:
        r = await model_client.post(
            "/v1/explanations", json={"account_ref": ref, "question": question, "as_of": "2026-11-10"}, headers=headers
        )
        assert r.status_code == 200, r.text
        body = r.json()
        answers.append(body)
        assert body["totals"] == {"current": "124.99", "previous": "112.99", "difference": "12.00"}
        assert body["model"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
        assert body["source"] in {"model", "fallback"}
        async with engine.connect() as conn:
            reason = (
                await conn.execute(text("SELECT fallback_reason FROM answers WHERE id = :i"), {"i": body["answer_id"]})
            ).scalar()
        assert (reason is None) == (body["source"] == "model")
    # (The prefix cache's reuse of the static prompt is measured at the engine, tests/integration/
    # test_engines.py: an answer stopped at its first failing sentence reports no token counts.)
    assert answers[2]["locale"] == "zh-CN"
