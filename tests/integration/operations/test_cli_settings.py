"""The real `bill-assistant` entry point refuses wrong settings with one line on stderr, before any work."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest

from app.settings import PROJECT_ROOT
from tests.servers import free_port, start_service, stop_service, wait_until_healthy

NOWHERE = "postgresql://nobody@127.0.0.1:9/nothing"  # a command that got past the settings would fail on it


def bill_assistant(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        cwd=PROJECT_ROOT,
        env={**os.environ, "DATABASE_URL": NOWHERE, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "name", "value", "message"),
    [
        (["serve", "--port", "0"], "ENGINE", "gpu", "ENGINE must be one of embedded, sglang, off (got 'gpu')"),
        (["migrate"], "ENGINE_TIMEOUT_S", "fast", "ENGINE_TIMEOUT_S must be a number > 0 (got 'fast')"),
        (["demo", "--port", "0"], "COOKIE_SECURE", "maybe",
         "COOKIE_SECURE must be one of 1, 0, true, false, yes, no, on, off (got 'maybe')"),
        (["tenants", "create", "x", "--name", "X"], "DB_POOL_SIZE", "0",
         "DB_POOL_SIZE must be an integer >= 1 (got '0')"),
        (["serve", "--port", "0"], "FORWARDED_ALLOW_IPS", "*",
         "FORWARDED_ALLOW_IPS must list IP addresses or networks, never * (got '*')"),
        (["serve", "--port", "0"], "BILL_ASSISTANT_ENV", "prod",
         "BILL_ASSISTANT_ENV must be one of development, production (got 'prod')"),
    ],
)  # fmt: skip
def test_wrong_settings_end_the_command_with_one_line(args: list[str], name: str, value: str, message: str) -> None:
    result = bill_assistant(*args, **{name: value})
    assert result.returncode == 1
    assert result.stderr == f"Error: {message}\n"  # one line, no traceback
    assert result.stdout == ""


def test_the_entry_point_runs_with_good_settings() -> None:
    result = bill_assistant("tenants", "--help", ENGINE="off")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Usage: python -m app.cli tenants [OPTIONS] COMMAND [ARGS]...\n")


def test_production_refuses_to_serve_without_a_metrics_token() -> None:
    """Before anything starts: the database (nowhere) is never reached."""
    result = bill_assistant("serve", "--port", "0", BILL_ASSISTANT_ENV="production", METRICS_TOKEN=" ")
    assert result.returncode == 1
    assert result.stderr == (
        "Error: BILL_ASSISTANT_ENV=production needs METRICS_TOKEN: without it /metrics is open to anyone\n"
    )


async def test_production_serves_with_a_metrics_token_and_asks_for_it(database_url: str) -> None:
    port = free_port()
    env = {"BILL_ASSISTANT_ENV": "production", "METRICS_TOKEN": "a-token", "ENGINE": "off", "BATCH_WORKER": "0"}
    proc = start_service(port, "--workers", "1", DATABASE_URL=database_url, **env)
    try:
        url = f"http://127.0.0.1:{port}"
        await wait_until_healthy(proc, url)
        async with httpx.AsyncClient(base_url=url) as http:
            assert (await http.get("/metrics")).status_code == 401
            assert (await http.get("/metrics", headers={"Authorization": "Bearer a-token"})).status_code == 200
    finally:
        stop_service(proc)
