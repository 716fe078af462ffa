"""The chat widget's side of a conversation in tests: the service's settings for it, a customer
session, a question asked, its Server-Sent Events read back, and a conversation handed to a person
(waiting for an agent) through the real API."""

from __future__ import annotations

import json
from typing import Any

from litestar.testing import AsyncTestClient

from app.settings import Settings
from bench.fakes.plans import CHANGE_UP, DRIVER_1_UP, GOOD_SHOWN, plan
from bench.fakes.sglang_server import RunningFake

QUESTION = "Why is my bill higher than last month?"
SECRET = "test-secret"
# The model writes a plan (bench/fakes/plans.py); the customer reads its claims in reviewed wordings, one
# delta per claim, released once the plan holds what the question needs (the change and its cause).
_CAUSE = GOOD_SHOWN.index(" The largest change")
GOOD_DELTAS = [GOOD_SHOWN[:_CAUSE], GOOD_SHOWN[_CAUSE:]]  # the change, then its cause
# The third claim contradicts the facts (the statement is unpaid); the two before it were already said.
BAD = plan(CHANGE_UP, DRIVER_1_UP, {"claim": "payment_status", "status": "paid"})
# A question the assistant hands to a person at once: the conversation then waits for an agent.
TO_A_PERSON = "agent please"


def sse(body: str) -> list[tuple[str, Any]]:
    """Each event of a stream, in order: (name, its JSON data)."""
    out = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.split("\n") if line and not line.startswith(":"))
        if "event" in fields:
            out.append((fields["event"], json.loads(fields["data"])))
    return out


def chat_settings(**extra: str) -> Settings:
    """No engine (deterministic answers), a known session secret, API keys checked on every request."""
    return Settings.from_env({"ENGINE": "off", "SESSION_SECRET": SECRET, "API_KEY_CACHE_TTL": "0", **extra})


def llm_settings(fake: RunningFake, **extra: str) -> Settings:
    return chat_settings(ENGINE="sglang", SGLANG_URL=fake.url, ANSWER_CACHE_FILL="0", **extra)


async def token_for(client: Any, key: str, customer_ref: str = "C-1001") -> str:
    """A customer session token, issued with the bank's API key."""
    r = await client.post("/v1/sessions", json={"customer_ref": customer_ref}, headers=_bearer(key))
    assert r.status_code == 201, r.text
    return str(r.json()["token"])


async def ask(client: Any, token: str, account_ref: str = "A-1", question: str = QUESTION) -> Any:
    return await client.post(
        "/v1/chat",
        json={"account_ref": account_ref, "question": question, "as_of": "2026-11-10"},
        headers=_bearer(token),
    )


def last_events(body: str) -> dict[str, Any]:
    """Each event's data by its name (the last of a name)."""
    return dict(sse(body))


async def waiting_conversation(
    client: AsyncTestClient[Any], api_key: str, customer_ref: str = "C-1001", account_ref: str = "A-1"
) -> tuple[dict[str, str], str]:
    """A customer session's headers, and its conversation handed to a person (status "waiting")."""
    session = await client.post("/v1/sessions", json={"customer_ref": customer_ref}, headers=_bearer(api_key))
    auth = _bearer(session.json()["token"])
    asked = await client.post("/v1/chat", json={"account_ref": account_ref, "question": TO_A_PERSON}, headers=auth)
    events = last_events(asked.text)
    assert events["turn"]["status"] == "waiting", asked.text
    return auth, str(events["conversation"]["conversation_id"])


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
