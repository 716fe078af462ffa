"""An ASGI app served by uvicorn on a thread of this process, on a free port of its own: the fake
engines, and the tests' in-process services."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any, Literal

import uvicorn


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
