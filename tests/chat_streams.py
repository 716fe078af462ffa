"""The chat widget's side of a conversation in tests: its Server-Sent Events read back, and a
conversation handed to a person (waiting for an agent) through the real API."""

from __future__ import annotations

import json
from typing import Any

from litestar.testing import AsyncTestClient

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
