"""PgBouncer's pools can be scraped: Debian's pgbouncer started by the project's own entry point
(deploy/pgbouncer/start.sh, which writes the auth file from the environment) with the project's
pgbouncer.ini, rewritten only for addresses, ports and paths. The stats user reads SHOW POOLS on the
admin console, with every column the exporter's dashboard metrics come from, and sees a client the
moment it connects; it can do nothing else, and nobody else can read them."""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.deploy.deployment import DEPLOY, PGBOUNCER_POOL_METRICS, dashboard_queries
from tests.servers import free_port

PGBOUNCER = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
PSQL = shutil.which("psql") or "/usr/bin/psql"
APP_PASSWORD = 'app-"password"-1'  # a quote, as the auth file must escape it
STATS_PASSWORD = "stats-password-1"


@dataclass(frozen=True)
class Bouncer:
    port: int
    auth_file: Path


def project_ini(tmp: Path, database_url: str, port: int) -> Path:
    url = make_url(database_url)
    host = url.host or str(url.query["host"])  # the embedded Postgres: its socket directory
    database = f"bill = host={host} port={url.port or 5432} dbname={url.database}"
    rewrites = [
        (r"(?m)^bill = host=postgres port=5432 dbname=bill$", database),
        (r"(?m)^listen_addr = 0\.0\.0\.0$", "listen_addr = 127.0.0.1"),
        (r"(?m)^listen_port = 6432$", f"listen_port = {port}"),
        (r"(?m)^auth_file = /tmp/userlist\.txt$", f"auth_file = {tmp / 'userlist.txt'}"),
    ]  # fmt: skip
    config = (DEPLOY / "pgbouncer" / "pgbouncer.ini").read_text()
    for pattern, replacement in rewrites:
        config, n = re.subn(pattern, replacement, config)
        assert n == 1, pattern
    path = tmp / "pgbouncer.ini"
    path.write_text(config)
    path.chmod(0o644)
    return path


@pytest.fixture
async def app_role(engine: AsyncEngine) -> AsyncIterator[None]:
    """Postgres' role for the app's user (compose's postgres service has it): PgBouncer logs in as it."""
    async with engine.begin() as conn:
        existed = (await conn.execute(text("SELECT 1 FROM pg_roles WHERE rolname = 'bill'"))).first() is not None
        if not existed:
            await conn.execute(text("CREATE ROLE bill LOGIN"))
    yield
    if not existed:
        async with engine.begin() as conn:
            await conn.execute(text("DROP ROLE IF EXISTS bill"))


@pytest.fixture
def bouncer(database_url: str, tmp_path: Path) -> Iterator[Bouncer]:
    assert Path(PGBOUNCER).exists(), "pgbouncer is missing: `./scripts/dev test` installs it (apt)"
    tmp_path.chmod(0o755)
    port = free_port()
    env = {
        **os.environ,
        "POSTGRES_PASSWORD": APP_PASSWORD,
        "PGBOUNCER_STATS_PASSWORD": STATS_PASSWORD,
        "PGBOUNCER_AUTH_FILE": str(tmp_path / "userlist.txt"),
        "PGBOUNCER_CONFIG": str(project_ini(tmp_path, database_url, port)),
        "PGBOUNCER": PGBOUNCER,
    }
    user = ["-u", "nobody"] if os.geteuid() == 0 else []  # PgBouncer refuses to run as root
    script = str(DEPLOY / "pgbouncer" / "start.sh")
    proc = subprocess.Popen(["sh", script, *user], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 10
        while True:
            assert proc.poll() is None, f"pgbouncer exited: {proc.stdout.read().decode() if proc.stdout else ''}"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "pgbouncer did not listen"
                time.sleep(0.05)
        yield Bouncer(port, tmp_path / "userlist.txt")
    finally:
        proc.terminate()
        proc.wait(10)


def admin(bouncer: Bouncer, user: str, password: str, command: str) -> list[dict[str, str]]:
    """A command on PgBouncer's admin console (simple query protocol, as the exporter's driver speaks it)."""
    assert Path(PSQL).exists(), "psql is missing: `./scripts/dev test` installs it (apt: postgresql-client)"
    args = [PSQL, "-h", "127.0.0.1", "-p", str(bouncer.port), "-U", user, "-d", "pgbouncer", "--csv", "-c", command]
    env = {**os.environ, "PGPASSWORD": password, "PGCONNECT_TIMEOUT": "5"}
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        raise PermissionError(done.stderr.strip())
    return list(csv.DictReader(io.StringIO(done.stdout)))


def app_pool(rows: list[dict[str, str]]) -> dict[str, str] | None:
    return next((row for row in rows if (row["database"], row["user"]) == ("bill", "bill")), None)


async def test_the_stats_user_reads_the_pools_the_dashboard_shows(bouncer: Bouncer, app_role: None) -> None:
    pools = admin(bouncer, "pgbouncer_stats", STATS_PASSWORD, "SHOW POOLS")
    assert pools  # the admin console's own pool at least
    # Every SHOW POOLS column the dashboard's PgBouncer metrics are read from.
    used = {m for q in dashboard_queries() for m in q.metrics if m.startswith("pgbouncer_")}
    assert used
    assert used <= PGBOUNCER_POOL_METRICS.keys()
    assert {PGBOUNCER_POOL_METRICS[m] for m in used} <= pools[0].keys()
    assert app_pool(pools) is None
    # The app's user, with the password start.sh wrote (quote and all), through the bouncer.
    conn = await asyncpg.connect(
        host="127.0.0.1", port=bouncer.port, user="bill", password=APP_PASSWORD, database="bill", statement_cache_size=0
    )
    try:
        assert await conn.fetchval("SELECT current_user") == "bill"
        pool = app_pool(admin(bouncer, "pgbouncer_stats", STATS_PASSWORD, "SHOW POOLS"))
        assert pool is not None
        assert (pool["cl_active"], pool["cl_waiting"], pool["pool_mode"]) == ("1", "0", "transaction")
    finally:
        await conn.close()


def test_only_the_stats_user_reads_and_it_only_reads(bouncer: Bouncer) -> None:
    assert admin(bouncer, "pgbouncer_stats", STATS_PASSWORD, "SHOW STATS")
    with pytest.raises(PermissionError, match="authentication failed"):
        admin(bouncer, "pgbouncer_stats", "wrong", "SHOW POOLS")
    with pytest.raises(PermissionError, match="not allowed"):
        admin(bouncer, "bill", APP_PASSWORD, "SHOW POOLS")  # the app's user is no stats user
    with pytest.raises(PermissionError, match="admin access needed"):
        admin(bouncer, "pgbouncer_stats", STATS_PASSWORD, "RELOAD")
    assert bouncer.auth_file.stat().st_mode & 0o077 == 0  # the passwords are the owner's alone
