"""Customer tokens signed with the service's secret but holding what no session could (issue 34,
item 7): a NUL in the customer's ref, ids past Postgres's bigint. Forging one needs the secret, so
this is robustness: every such token is a 401 like any invalid one, never a 500."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from app.api.app import create_app
from app.security import CustomerClaims, issue_token, read_token
from app.settings import Settings
from tests.factories import customer, document

SECRET = "forged-tokens-secret-" + "s" * 16
QUESTION = {"account_ref": "A-1", "question": "Why is my bill higher than last month?"}


@pytest.fixture
async def client(database_url: str) -> AsyncIterator[AsyncTestClient[Any]]:
    env = {"ENGINE": "off", "SESSION_SECRET": SECRET, "API_KEY_CACHE_TTL": "0", "BATCH_WORKER": "0"}
    async with AsyncTestClient(app=create_app(Settings.from_env(env), database_url)) as client:
        yield client


@pytest.mark.parametrize(
    "changed",
    [
        {"customer_ref": "C-1001\x00"},
        {"customer_ref": "\x00"},
        {"customer_ref": ""},
        {"tenant_id": 2**63},
        {"key_id": 2**63},
        {"tenant_id": 0},
    ],
    ids=["nul-after-ref", "nul-ref", "empty-ref", "tenant-past-bigint", "key-past-bigint", "tenant-zero"],
)
async def test_a_signed_token_holding_what_no_session_could_is_a_401(
    client: AsyncTestClient[Any], make_tenant: Any, load: Any, changed: dict[str, Any]
) -> None:
    bank = await make_tenant()
    await load(document(bank.slug, [customer()]))
    issued = await client.post(
        "/v1/sessions", json={"customer_ref": "C-1001"}, headers={"Authorization": f"Bearer {bank.key}"}
    )
    real = read_token(SECRET, issued.json()["token"])
    fields: dict[str, Any] = {"tenant_id": real.tenant_id, "key_id": real.key_id, "customer_ref": real.customer_ref}
    forged = issue_token(SECRET, CustomerClaims(**(fields | changed), expires=int(time.time()) + 600))
    for token, expected in ((issued.json()["token"], 200), (forged, 401)):
        auth = {"Authorization": f"Bearer {token}"}
        accounts = await client.get("/v1/chat/accounts", headers=auth)
        assert accounts.status_code == expected, accounts.text
        chat = await client.post("/v1/chat", json=QUESTION, headers=auth)
        assert chat.status_code == expected, chat.text
    assert chat.json() == {"status": 401, "error": "unauthorized", "message": "the session token is not valid"}
