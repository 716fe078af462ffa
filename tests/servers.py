"""Servers for tests: an ASGI app on a real loopback port in a background thread (its own event
loop), and the real `bill-assistant serve` in a subprocess."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable

import httpx

from app.settings import PROJECT_ROOT
from bench.fakes.server import ThreadedServer as ThreadedServer  # the tests' in-process servers

# The browser tests' `served` (tests/browser/conftest.py): settings (and a database URL) in, a running service.
Serve = Callable[..., ThreadedServer]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop_service(*procs: subprocess.Popen[bytes], timeout_s: float = 30) -> None:
    """SIGTERM (the supervisor stops its workers, the service drains), killed only as a last resort.
    Several are signalled together, so that they drain at once (a drain is about a second)."""
    running = [proc for proc in procs if proc.poll() is None]
    for proc in running:
        proc.terminate()
    for proc in running:
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_service(port: int, *args: str, **env: str) -> subprocess.Popen[bytes]:
    """The real entry point, as a deployment runs it (`args`: more `serve` options)."""
    return subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port), *args],
        cwd=PROJECT_ROOT,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


async def wait_until_healthy(proc: subprocess.Popen[bytes], url: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    async with httpx.AsyncClient(base_url=url, timeout=1) as http:
        while time.monotonic() < deadline:
            assert proc.poll() is None, "the service exited before it was healthy"
            try:
                if (await http.get("/health")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError("the service did not become healthy")
