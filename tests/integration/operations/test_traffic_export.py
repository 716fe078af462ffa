"""`traffic export`: the requests a bank really had, from the audit rows, as a traffic file that
`replay` plays with the same timing; personal data in the questions masked unless asked not to."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.app import create_app
from app.replay.run import replay
from app.replay.traffic import dumps, export, loads
from app.settings import Settings
from tests.factories import account, customer, document
from tests.servers import ThreadedServer

AS_OF = "2026-11-10"
TYPED = [
    ("api", "Hi, my name is John Smith, why is my bill higher? Card 4111.1111.1111.1111"),
    ("batch", "Did my payment arrive? Write to ann.lee@example.com or 06 12 34 56 78"),
    ("widget", "Ann Lee here: did priya raghunathan pay me 1000000.00 on reference 20261015?"),
]
# The asker, another customer of the same bank (the directory), a card with dots, a French mobile
# number; the amount and the reference stay.
MASKED = [
    "Hi, my name is <name>, why is my bill higher? Card <card>",
    "Did my payment arrive? Write to <email> or <phone>",
    "<name> here: did <name> pay me 1000000.00 on reference 20261015?",
]


async def test_exported_traffic_keeps_who_what_and_when_masks_people_and_replays(
    database_url: str, make_tenant: Any, load: Any, engine: AsyncEngine
) -> None:
    bank, other = await make_tenant("interactive"), await make_tenant()
    priya = customer("C-1002", accounts=[account("A-2")]) | {"name": "Priya Raghunathan"}  # asks nothing
    await load(document(bank.slug, [customer(), priya]))
    await load(document(other.slug))
    env = {"ENGINE": "off", "API_KEY_CACHE_TTL": "0", "BATCH_WORKER": "0", "SESSION_SECRET": "export-secret"}
    server = ThreadedServer(create_app(Settings.from_env(env), database_url))
    since = datetime.now(UTC) - timedelta(seconds=1)
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            key = {"Authorization": f"Bearer {bank.key}"}
            session = await http.post("/v1/sessions", json={"customer_ref": "C-1001"}, headers=key)
            token = {"Authorization": f"Bearer {session.json()['token']}"}
            for channel, question in TYPED:
                body = {"account_ref": "A-1", "question": question, "as_of": AS_OF}
                if channel == "widget":
                    reply = await http.post("/v1/chat", json=body, headers=token)
                else:
                    reply = await http.post("/v1/explanations", json=body | {"channel": channel}, headers=key)
                assert reply.status_code == 200, reply.text
                await asyncio.sleep(0.3)
            other_key = {"Authorization": f"Bearer {other.key}"}
            assert (
                await http.post("/v1/explanations", json={"account_ref": "A-1", "question": "Why?"}, headers=other_key)
            ).status_code == 200
        async with engine.begin() as conn:  # what the service asked itself is no traffic
            await conn.execute(
                text("UPDATE answers SET origin = 'fill' WHERE tenant_id = :t AND channel = 'batch'"), {"t": other.id}
            )
            await conn.execute(
                text(
                    "INSERT INTO answers (id, tenant_id, account_id, statement_id, channel, origin, question, locale,"
                    " answer, source, intent, prompt_version, timings) SELECT gen_random_uuid(), tenant_id,"
                    " account_id, statement_id, 'batch', 'fill', 'canonical', locale, answer, source, intent,"
                    " prompt_version, timings FROM answers WHERE tenant_id = :t LIMIT 1"
                ),
                {"t": bank.id},
            )
        until = datetime.now(UTC) + timedelta(seconds=1)
        statements: list[str] = []

        def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
            statements.append(statement)

        async with engine.connect() as conn:
            event.listen(engine.sync_engine, "before_cursor_execute", record)
            try:
                masked = await export(conn, since, until, bank.slug)
            finally:
                event.remove(engine.sync_engine, "before_cursor_execute", record)
            typed = await export(conn, since, until, bank.slug, keep_text=True)
            everyone = await export(conn, since, until, None)

        assert [(a.tenant, a.channel, a.account_ref, a.customer_ref, a.locale, a.as_of) for a in masked] == [
            (bank.slug, channel, "A-1", "C-1001", "en", date(2026, 11, 10)) for channel, _ in TYPED
        ]
        assert [a.question for a in masked] == MASKED
        assert len(statements) == 2, statements  # the rows, then the bank's directory once: not per row
        assert [a.question for a in typed] == [question for _, question in TYPED]
        gaps = [b.at - a.at for a, b in itertools.pairwise(masked)]
        assert masked[0].at == 0
        assert all(0.25 < gap < 2.0 for gap in gaps), gaps  # the pauses between the requests, kept
        assert {bank.slug, other.slug} <= {a.tenant for a in everyone}  # other tests' banks answer meanwhile

        # The file replays: every request answered again, the widget's through a session token.
        replayed = await replay(loads(dumps(masked)), server.url, {bank.slug: bank.key})
        assert [(s.channel, s.status) for s in replayed] == [(channel, 200) for channel, _ in TYPED]
    finally:
        server.stop()


def test_the_command_writes_the_file_and_says_what_it_did(cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "traffic.jsonl"
    result = cli("traffic", "export", "--since", "2026-01-01", "--until", "2026-01-02", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert result.stdout == f"0 requests written to {out} (personal data masked)\n"
    assert out.read_bytes() == b""
