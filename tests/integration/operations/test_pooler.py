"""The service behind a real PgBouncer in transaction mode, the production topology's pooler: two
server connections shared by every pool of the app (the main pool, the answer path's, the admission
ledger's), so consecutive transactions of one client land on different server connections.

With DATABASE_POOLER=transaction every request is answered: no statement outlives its transaction.
Without it, asyncpg's named prepared statements meet another client's of the same name, or are
looked for on a server connection that never saw them, and requests fail."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from sqlalchemy.engine import make_url

from app.api.app import create_app
from app.cli import main
from app.settings import Settings
from bench.fakes.plans import GOOD
from bench.fakes.sglang_server import RunningFake, Script
from tests.console import csrf_of, sign_in
from tests.factories import account, customer, document, write_csv
from tests.servers import ThreadedServer, free_port

PGBOUNCER = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"  # Debian's package puts it in sbin
BO = customer("C-2002", accounts=[account("B-1"), account("B-2")])
# Loaded straight into Postgres (only the service goes through the pooler), with limits that never 429.
pytestmark = pytest.mark.bank(
    customer(), BO, agents=("ana",), limits={"rate_limit_per_s": 10_000, "max_concurrency": 1_000}
)
QUESTION = "Why is my bill higher than last month?"
PREPARED = re.compile(r'prepared statement \\?"\w+\\?" (does not exist|already exists)')
ROUNDS = 3


def _wait_for_port(proc: subprocess.Popen[bytes], port: int, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"pgbouncer exited: {proc.stdout.read().decode() if proc.stdout else ''}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("pgbouncer did not listen")


@pytest.fixture
def pooler_url(database_url: str, tmp_path: Path) -> Iterator[str]:
    """The test database through PgBouncer (pool_mode transaction, 2 server connections)."""
    assert Path(PGBOUNCER).exists(), "pgbouncer is missing: `./scripts/dev test` installs it (apt)"
    url = make_url(database_url)
    # The embedded Postgres listens on a Unix socket only: PgBouncer takes its directory as host.
    host = url.host or str(url.query["host"])
    port = free_port()
    config = tmp_path / "pgbouncer.ini"
    config.write_text(
        f"[databases]\n{url.database} = host={host} port={url.port or 5432} dbname={url.database}"
        f" user={url.username or 'postgres'}\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        # Any client user name, logged in to Postgres as the database line's user (the test server trusts it).
        "auth_type = any\n"
        "pool_mode = transaction\ndefault_pool_size = 2\nmin_pool_size = 0\nreserve_pool_size = 0\n"
        "max_client_conn = 500\n"
    )
    config.chmod(0o644)
    # PgBouncer refuses to run as root; it reads its configuration, then becomes this user.
    user = ["-u", "nobody"] if os.geteuid() == 0 else []
    proc = subprocess.Popen([PGBOUNCER, *user, str(config)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        _wait_for_port(proc, port)
        yield url.set(host="127.0.0.1", port=port, query={}).render_as_string(hide_password=False)
    finally:
        proc.terminate()
        proc.wait(10)


def _settings(fake: RunningFake, **extra: str) -> Settings:
    env = {
        "ENGINE": "sglang",
        "SGLANG_URL": fake.url,
        "ADMISSION": "shared",  # the ledger's pool through the pooler too
        "SESSION_SECRET": "pooler-secret",
        "API_KEY_CACHE_TTL": "0",  # every request looks its key up: more transactions to interleave
        "BATCH_POLL_S": "0.05",
        "COOKIE_SECURE": "0",
        "MAX_IN_FLIGHT": "1000",
        "SIGNIN_CLIENT_ATTEMPTS": "100000",
    }
    return Settings.from_env(env | extra)


async def _explain(client: Any, key: str, ref: str) -> int:
    body = {"account_ref": ref, "question": QUESTION, "as_of": "2026-11-10"}
    r = await client.post("/v1/explanations", json=body, headers={"Authorization": f"Bearer {key}"})
    return int(r.status_code)


async def _chat(client: Any, key: str) -> int:
    r = await client.post("/v1/sessions", json={"customer_ref": "C-1001"}, headers={"Authorization": f"Bearer {key}"})
    if r.status_code != 201:
        return int(r.status_code)
    token = r.json()["token"]
    body = {"account_ref": "A-1", "question": QUESTION, "as_of": "2026-11-10"}
    r = await client.post("/v1/chat", json=body, headers={"Authorization": f"Bearer {token}"})
    return int(r.status_code) if "event: final" in r.text else 599  # the stream must end with its answer


async def _batch(client: Any, key: str) -> int:
    headers = {"Authorization": f"Bearer {key}"}
    items = [{"account_ref": ref, "as_of": "2026-11-10"} for ref in ("A-1", "B-1", "B-2") * 3]
    r = await client.post("/v1/explanations:batch", json={"items": items}, headers=headers)
    if r.status_code != 202:
        return int(r.status_code)
    job = r.json()["job_id"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        r = await client.get(f"/v1/jobs/{job}", headers=headers)
        if r.status_code != 200:
            return int(r.status_code)
        if r.json()["status"] == "done":
            failed = [item for item in r.json()["items"] if item.get("error")]
            return 200 if not failed else 598
        await asyncio.sleep(0.05)
    return 597


async def _console(url: str, slug: str) -> int:
    """An agent in a browser of its own: sign in, open the account, ask."""
    async with httpx.AsyncClient(base_url=url, timeout=60) as browser:
        r = await sign_in(browser, slug)
        if r.status_code != 303:
            return int(r.status_code)
        page = await browser.get("/console/accounts/A-1")
        if page.status_code != 200:
            return int(page.status_code)
        data = {"csrf_token": csrf_of(page), "question": QUESTION, "locale": "en"}
        r = await browser.post("/console/accounts/A-1/answers", data=data, follow_redirects=True)
        return int(r.status_code)


async def _status(work: Awaitable[int]) -> int:
    """A response cut off mid-body (a stream whose statement failed after it began) counts as 0."""
    try:
        return await work
    except httpx.TransportError:
        return 0


async def _load(
    settings: Settings, url: str, bank: Any, capfd: pytest.CaptureFixture[str]
) -> tuple[list[int], list[str]]:
    """Rounds of concurrent work on every route family; the statuses, and the prepared-statement
    errors the service logged (its JSON log lines, tracebacks included, on the captured output)."""
    statuses: list[int] = []
    server = ThreadedServer(create_app(settings, url))
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            for _ in range(ROUNDS):
                work = [
                    *(_explain(client, bank.key, ref) for ref in ("A-1", "B-1", "B-2") * 4),
                    *(_chat(client, bank.key) for _ in range(4)),
                    _batch(client, bank.key),
                    _console(server.url, bank.slug),
                    _console(server.url, bank.slug),
                ]
                statuses += await asyncio.gather(*map(_status, work))
    finally:
        server.stop()
    errors = sorted({m[1] for m in PREPARED.finditer(capfd.readouterr().out)})
    return statuses, errors


async def test_every_route_through_a_transaction_pooler(
    pooler_url: str, bank: Any, fake_sglang: RunningFake, capfd: pytest.CaptureFixture[str]
) -> None:
    fake_sglang.fake.default = Script(text=GOOD)
    settings = _settings(fake_sglang, DATABASE_POOLER="transaction")
    statuses, errors = await _load(settings, pooler_url, bank, capfd)
    assert errors == []
    assert statuses == [200] * len(statuses)


async def test_without_the_setting_prepared_statements_break(
    pooler_url: str, bank: Any, fake_sglang: RunningFake, capfd: pytest.CaptureFixture[str]
) -> None:
    """The control: the same load, the same pooler, DATABASE_POOLER unset."""
    fake_sglang.fake.default = Script(text=GOOD)
    statuses, errors = await _load(_settings(fake_sglang), pooler_url, bank, capfd)
    assert errors, "no prepared-statement error without DATABASE_POOLER=transaction"
    assert any(status != 200 for status in statuses)


def test_the_import_commands_through_a_transaction_pooler(
    pooler_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CSV (COPY into temporary tables dropped at commit) and JSON, in one transaction each."""
    monkeypatch.setenv("DATABASE_URL", pooler_url)
    monkeypatch.setenv("DATABASE_POOLER", "transaction")
    runner = CliRunner()
    slug = f"pooled-{uuid.uuid4().hex[:8]}"
    assert runner.invoke(main, ["tenants", "create", slug, "--name", "Pooled"]).exit_code == 0
    files = write_csv(document(slug), tmp_path)
    args = ["import", "--tenant", slug, *(a for name, p in files.items() for a in (f"--{name}", str(p)))]
    result = runner.invoke(main, args, catch_exceptions=False)
    assert "transactions: 6 created, 0 updated, 0 unchanged" in result.stdout, result.output
    doc = tmp_path / "bank.json"
    doc.write_text(json.dumps(document(slug, [customer("C-3003", accounts=[account("C-1")])])))
    result = runner.invoke(main, ["import", str(doc)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "transactions: 6 created" in result.stdout, result.output
