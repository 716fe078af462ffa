"""What the benchmarks share: a scratch database with the demo bank, and the service as a process."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import msgspec
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from app import demo
from app.data.connecting import resolve_database_url
from app.data.database import create_engine, migrate
from app.data.import_format import parse
from app.data.importer import import_file
from app.data.tenants import create_tenant, issue_api_key, set_limits
from app.settings import Settings


async def _admin(url: str, statement: str) -> None:
    engine = create_async_engine(url, isolation_level="AUTOCOMMIT")
    async with engine.connect() as conn:
        await conn.execute(text(statement))
    await engine.dispose()


async def _seed(url: str) -> tuple[str, list[str]]:
    tenant = demo.TENANTS[0]
    engine = create_engine(url)
    async with engine.begin() as conn:
        tenant_id = await create_tenant(conn, tenant.slug, tenant.name, tenant.priority_class)
        key = await issue_api_key(conn, tenant_id, "bench")
        await set_limits(conn, tenant.slug, {"rate_limit_per_s": 1e6})  # measure the service, not the limit
        await import_file(conn, parse(msgspec.json.encode(demo.generate(tenant))))
        result = await conn.execute(text("SELECT ref FROM accounts WHERE tenant_id = :t"), {"t": tenant_id})
        refs = list(result.scalars())
    await engine.dispose()
    return key, refs


@contextmanager
def scratch_database() -> Iterator[str]:
    """A migrated scratch database on DATABASE_URL's server (or the embedded one); yields its URL,
    dropped afterwards."""
    admin = resolve_database_url(Settings.from_env())
    name = f"bill_bench_{os.getpid()}"
    asyncio.run(_admin(admin, f'CREATE DATABASE "{name}"'))
    url = make_url(admin).set(database=name).render_as_string(hide_password=False)
    try:
        migrate(url)
        yield url
    finally:
        asyncio.run(_admin(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@contextmanager
def demo_database() -> Iterator[tuple[str, str, list[str]]]:
    """A scratch database with the Northbridge demo bank; yields its URL, an API key and the account refs."""
    with scratch_database() as url:
        key, refs = asyncio.run(_seed(url))
        yield url, key, refs


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def service(database_url: str, env: dict[str, str]) -> Iterator[int]:
    """`bill-assistant serve` in its own process with extra environment; yields its port when ready."""
    with service_process(database_url, env) as (port, _):
        yield port


@contextmanager
def service_process(database_url: str, env: dict[str, str], workers: int = 1) -> Iterator[tuple[int, int]]:
    """As `service`, yielding its port and process id (to read its CPU time from /proc)."""
    port = free_port()
    command = [sys.executable, "-m", "app", "serve", "--port", str(port), "--workers", str(workers)]
    with ready_process(command, port, {"DATABASE_URL": database_url, **env}) as pid:
        yield port, pid


@contextmanager
def ready_process(command: list[str], port: int, env: dict[str, str]) -> Iterator[int]:
    """A server process with extra environment, from when GET /ready on its port answers 200; its pid."""
    process = subprocess.Popen(command, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError(f"{' '.join(command[2:4])} did not become ready") from None
                time.sleep(0.2)
        yield process.pid
    finally:
        process.terminate()
        process.wait(30)
