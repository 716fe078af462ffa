"""The production edge, run for real: Debian's nginx with the project's deploy/nginx/nginx.conf in
front of two `serve` replicas started with compose's environment (BILL_ASSISTANT_ENV=production,
X-Forwarded-For believed from the proxy's address only, METRICS_TOKEN set).

- A client's own X-Forwarded-For names nobody: forged, rotating leftmost entries neither reset the
  console's per-address sign-in throttle nor reach the request log or the sign-in records.
- A replica believes X-Forwarded-For only from the proxy, and then takes the first untrusted hop from
  the right.
- No spelling of /metrics the app would route gets through the proxy, not even with the token."""

from __future__ import annotations

import asyncio
import json
import socket
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.console.session import LOGIN_CSRF_COOKIE
from app.data.signin import client_key
from app.settings import PROJECT_ROOT
from tests.console import PASSWORD, csrf_of
from tests.proxy import Output, nginx_config, replica_environment, running_nginx
from tests.servers import free_port, start_service, stop_service, wait_until_healthy
from tests.waiting import until

WRONG = "guess-guess-guess"
TOKEN = "proxy-test-metrics-token"
# Every path the app routes to its metrics (checked against a replica below), and other spellings.
METRICS_PATHS = [
    "/metrics", "/metrics/", "//metrics", "///metrics/", "/metrics//", "/metrics?x=1", "/metrics/?x",
    "/%6detrics", "/%6Detrics/", "/metrics%2F", "/metrics#", "/METRICS", "/Metrics/", "/./metrics",
    "/x/../metrics", "/metrics/../metrics", "/metrics;x",
]  # fmt: skip


@dataclass
class Edge:
    proxy: str
    replicas: list[str]
    outputs: list[Output]

    def events(self, name: str) -> list[dict[str, Any]]:
        """The replicas' JSON log events of this name, so far."""
        lines = [line for output in self.outputs for line in output.lines if line.startswith("{")]
        return [e for e in map(json.loads, lines) if e.get("event") == name]


@pytest.fixture(scope="module")
def edge(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Edge]:
    ports = [free_port(), free_port()]
    env = replica_environment(
        DATABASE_URL=database_url,
        DATABASE_POOLER="none",  # no PgBouncer here (tests/integration/operations/test_pooler.py runs one)
        ENGINE="off",
        SESSION_SECRET="proxy-test-secret",
        METRICS_TOKEN=TOKEN,
        CACHE_FILL_INTERVAL_S="0",
        BATCH_WORKER="0",
    )
    procs = [start_service(port, "--workers", "1", **env) for port in ports]
    outputs = [Output(proc) for proc in procs]
    try:
        for proc, port in zip(procs, ports, strict=True):
            asyncio.run(wait_until_healthy(proc, f"http://127.0.0.1:{port}"))
        with running_nginx(tmp_path_factory.mktemp("nginx"), free_port(), ports) as proxy:
            yield Edge(proxy, [f"http://127.0.0.1:{port}" for port in ports], outputs)
    finally:
        stop_service(*procs)


@asynccontextmanager
async def console(url: str, address: str) -> AsyncIterator[httpx.AsyncClient]:
    """A browser at this loopback address with the sign-in form's double-submit pair."""
    transport = httpx.AsyncHTTPTransport(local_address=address)
    async with httpx.AsyncClient(base_url=url, transport=transport, timeout=30) as client:
        form = await client.get("/console/login")
        assert form.status_code == 200, form.text
        client.headers["x-test-csrf"] = csrf_of(form)
        client.headers["cookie"] = f"{LOGIN_CSRF_COOKIE}={form.cookies[LOGIN_CSRF_COOKIE]}"
        yield client


async def sign_in(client: httpx.AsyncClient, slug: str, username: str, password: str, forwarded: str) -> int:
    form = {"csrf_token": client.headers["x-test-csrf"], "tenant": slug, "username": username, "password": password}
    headers = {"X-Forwarded-For": forwarded}
    response = await client.post("/console/login", data=form, headers=headers, follow_redirects=False)
    return response.status_code


async def client_rows(engine: AsyncEngine, *keys: str) -> dict[str, int]:
    """The throttle's client rows with these keys, and any a forged 7.7.7.x address made."""
    async with engine.begin() as conn:
        rows = await conn.execute(
            text("SELECT key, failures FROM signin_throttle WHERE key = ANY(:keys) OR key LIKE 'client:7.7.7.%'"),
            {"keys": list(keys)},
        )
    return {row.key: row.failures for row in rows}


@pytest.mark.bank(agents=("ana",))
async def test_forged_forwarded_for_through_the_proxy_neither_resets_the_throttle_nor_is_logged(
    edge: Edge, bank: Any, engine: AsyncEngine
) -> None:
    slug = bank.slug
    async with console(edge.proxy, "127.0.0.5") as client:
        # A password spray, 30 usernames, each attempt claiming another address.
        statuses = [await sign_in(client, slug, f"user{n}", WRONG, f"7.7.7.{n}") for n in range(1, 31)]
        assert statuses == [401] * 30
        # The right password, once more from a "new" address: the throttle holds (20 a minute).
        assert await sign_in(client, slug, "ana", PASSWORD, "7.7.7.31") == 401
    assert await client_rows(engine, client_key("127.0.0.5")) == {client_key("127.0.0.5"): 20}
    # Only the address was throttled: ana, from another one, signs in.
    async with console(edge.proxy, "127.0.0.7") as other:
        assert await sign_in(other, slug, "ana", PASSWORD, "7.7.7.32") == 303

    def signins() -> list[dict[str, Any]]:
        return [e for e in edge.events("console_signin") if e["tenant"] == slug]

    await until("the 32 sign-in records", lambda: len(signins()) == 32)
    records = signins()  # from both replicas (least_conn spreads them)
    assert Counter((e["client"], e["outcome"]) for e in records) == {
        ("127.0.0.5", "refused"): 20,
        ("127.0.0.5", "throttled"): 11,
        ("127.0.0.7", "signed_in"): 1,
    }
    assert [e["agent_id"] is None for e in records].count(False) == 1  # the agent, once signed in
    assert "ana" not in json.dumps(records)  # the username only as its digest
    logins = [e for e in edge.events("request") if e["route"] == "/console/login" and e["method"] == "POST"]
    assert not [e for e in logins if e["client"].startswith("7.7.7.")]


PROBED = ("/ready", "/v1/chat/accounts")


def probe(url: str, path: str, address: str, headers: dict[str, str]) -> int:
    """One raw GET (the path exactly as given, no client-side normalising); its status."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), source_address=(address, 0)) as sock:
        lines = [
            f"GET {path} HTTP/1.1",
            f"Host: {host}",
            "Connection: close",
            *(f"{k}: {v}" for k, v in headers.items()),
        ]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return int(data.split(b" ", 2)[1])


async def test_a_replica_believes_forwarded_for_from_the_proxy_only_and_from_the_right(edge: Edge) -> None:
    replica = edge.replicas[0]
    # Straight from a stranger: its X-Forwarded-For is ignored.
    # (Two routes this module asks nowhere else: the request log names the route, not the path.)
    assert probe(replica, "/ready", "127.0.0.6", {"X-Forwarded-For": "7.7.7.7"}) == 200
    # From the proxy's address: the first hop from the right that is not the proxy.
    forwarded = {"X-Forwarded-For": "7.7.7.7, 127.0.0.9, 127.0.0.1"}
    assert probe(replica, "/v1/chat/accounts", "127.0.0.1", forwarded) == 401

    def clients() -> dict[str, str]:
        return {e["route"]: e["client"] for e in edge.events("request") if e["route"] in PROBED}

    await until("both probes logged", lambda: len(clients()) == 2)
    assert clients() == {"/ready": "127.0.0.6", "/v1/chat/accounts": "127.0.0.9"}


def test_no_spelling_of_metrics_gets_through_the_proxy(edge: Edge) -> None:
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    direct = {path: probe(edge.replicas[0], path, "127.0.0.1", bearer) for path in METRICS_PATHS}
    routed = {path for path, status in direct.items() if status == 200}
    # What the app itself routes to its metrics (so the proxy has these to block) ...
    assert routed == {
        "/metrics", "/metrics/", "//metrics", "///metrics/", "/metrics//", "/metrics?x=1", "/metrics/?x",
        "/%6detrics", "/%6Detrics/", "/metrics%2F", "/metrics#",
    }  # fmt: skip
    assert probe(edge.replicas[0], "/metrics/", "127.0.0.1", {}) == 401  # and only with the token
    # ... and the proxy answers none of them, token or not.
    through = {path: probe(edge.proxy, path, "127.0.0.8", bearer) for path in METRICS_PATHS}
    assert through == dict.fromkeys(METRICS_PATHS, 404)
    assert probe(edge.proxy, "/health", "127.0.0.8", {}) == 200  # the proxy does serve the app


def test_the_proxy_config_was_rewritten_only_for_addresses(tmp_path: Path) -> None:
    """The test's nginx.conf is the project's, but for the listening and upstream addresses and paths."""
    ours = nginx_config(tmp_path, 18080, [18001, 18002]).read_text().splitlines()
    project = (PROJECT_ROOT / "deploy" / "nginx" / "nginx.conf").read_text().splitlines()
    changed = [line.strip() for line in ours if line not in project]
    assert [line for line in changed if "_temp_path " not in line] == [
        "server 127.0.0.1:18001 max_fails=3 fail_timeout=10s;",
        "server 127.0.0.1:18002 max_fails=3 fail_timeout=10s;",
        "listen 127.0.0.1:18080;",
    ]
