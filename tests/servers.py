"""Servers for tests: an ASGI app on a real loopback port in a background thread (its own event
loop), and the real `bill-assistant serve` in a subprocess."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
from typing import Any, Literal

import httpx
import uvicorn

from app.settings import PROJECT_ROOT


class ThreadedServer:
    def __init__(self, app: Any, *, lifespan: Literal["auto", "on", "off"] = "on") -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan=lifespan))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the server did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)

    def kill(self) -> None:
        """Stop like a killed process: the port closes and responses still being sent are cut off."""
        self._server.force_exit = True  # no waiting for open responses: their tasks are cancelled
        self.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop_service(proc: subprocess.Popen[bytes], timeout_s: float = 30) -> None:
    """SIGTERM (the supervisor stops its workers, the service drains), killed only as a last resort."""
    if proc.poll() is not None:
        return
    proc.terminate()
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
