"""A customer's message into a conversation a person answers (issue 34, item 7): about one of their own
accounts only, like a question the assistant answers; another customer's or another bank's account is
"not found" and nothing is stored."""

from __future__ import annotations

import json
from typing import Any

from litestar.testing import AsyncTestClient

from app.api.app import create_app
from app.settings import Settings
from tests.factories import account, customer, document


def _events(body: str) -> dict[str, Any]:
    out = {}
    for block in body.replace("\r\n", "\n").split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.split("\n") if line and not line.startswith(":"))
        if "event" in fields:
            out[fields["event"]] = json.loads(fields["data"])
    return out


async def test_a_message_to_a_waiting_conversation_is_about_the_customers_own_account(
    database_url: str, make_tenant: Any, load: Any
) -> None:
    tenant, other = await make_tenant("interactive"), await make_tenant()
    await load(document(tenant.slug, [customer(), customer("C-2002", accounts=[account("B-1")])]))
    await load(document(other.slug, [customer(accounts=[account("Z-1")])]))
    env = {"ENGINE": "off", "SESSION_SECRET": "s" * 32, "API_KEY_CACHE_TTL": "0"}
    async with AsyncTestClient(app=create_app(Settings.from_env(env), database_url)) as client:
        key = {"Authorization": f"Bearer {tenant.key}"}
        token = (await client.post("/v1/sessions", json={"customer_ref": "C-1001"}, headers=key)).json()["token"]
        auth = {"Authorization": f"Bearer {token}"}
        asked = await client.post("/v1/chat", json={"account_ref": "A-1", "question": "agent please"}, headers=auth)
        cid = _events(asked.text)["conversation"]["conversation_id"]
        assert _events(asked.text)["turn"]["status"] == "waiting"

        async def say(account_ref: str) -> Any:
            body = {"account_ref": account_ref, "question": "Are you there?", "conversation_id": cid}
            return await client.post("/v1/chat", json=body, headers=auth)

        for foreign in ("B-1", "Z-1", "NO-SUCH"):  # another customer's, another bank's, none
            refused = await say(foreign)
            assert refused.status_code == 404, refused.text
            assert f"account '{foreign}' not found" in refused.text
        mine = await say("A-1")
        assert mine.status_code == 200
        transcript = (await client.get(f"/v1/chat/conversations/{cid}", headers=auth)).json()["messages"]
    said = [(m["role"], m.get("account_ref")) for m in transcript if m["role"] == "customer"]
    assert said == [("customer", "A-1"), ("customer", "A-1")]
