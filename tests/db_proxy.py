"""A TCP proxy in front of the test Postgres, on a free loopback port in a background thread, that a
test turns into each way a database can be out of reach for the service behind it:

- `forward`: passes bytes both ways (the database as it is);
- `refuse`: every open connection cut, new ones refused (the host or the server went away);
- `hang`: every open connection cut, new ones accepted and never answered (a slow connect: a
  firewall dropping packets, a server stuck in recovery);
- `too_many`: every open connection cut, new ones answered as a full server answers them, with
  FATAL 53300 "sorry, too many clients already" after the startup message (max_connections reached).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from typing import Literal

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

Mode = Literal["forward", "refuse", "hang", "too_many"]
SSL_REQUEST = 80877103  # the code of the SSLRequest packet a client may send before its startup


def _error_response(code: str, message: str) -> bytes:
    fields = b"".join(kind + value.encode() + b"\0" for kind, value in ((b"S", "FATAL"), (b"C", code), (b"M", message)))
    body = fields + b"\0"
    return b"E" + struct.pack("!I", len(body) + 4) + body


TOO_MANY = _error_response("53300", "sorry, too many clients already")


class DatabaseProxy:
    """`target`: (host, port), or the path of a Unix socket (the embedded Postgres)."""

    def __init__(self, target: tuple[str, int] | str) -> None:
        self.target = target
        self.mode: Mode = "forward"
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._call(self._listen())

    def set(self, mode: Mode) -> None:
        self._call(self._set(mode))

    def close(self) -> None:
        self._call(self._set("refuse"))
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def _call(self, coroutine: object) -> None:
        asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(10)  # type: ignore[arg-type]

    async def _set(self, mode: Mode) -> None:
        self.mode = mode
        if mode != "forward":
            for writer in list(self._open):
                writer.transport.abort()  # a reset, as when the server's host goes away
            self._open.clear()
        if mode == "refuse" and self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        elif mode != "refuse" and self._server is None:
            await self._listen()

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port, reuse_address=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._open.add(writer)
        try:
            if self.mode == "hang":
                await asyncio.Event().wait()  # until the client gives up or the mode changes
            elif self.mode == "too_many":
                await self._refuse_startup(reader, writer)
            else:
                await self._forward(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._open.discard(writer)
            writer.transport.abort()

    @staticmethod
    async def _refuse_startup(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        length, code = struct.unpack("!II", await reader.readexactly(8))
        if code == SSL_REQUEST:
            writer.write(b"N")  # no TLS here; the client then sends its startup message
            length, _ = struct.unpack("!II", await reader.readexactly(8))
        await reader.readexactly(length - 8)
        writer.write(TOO_MANY)
        await writer.drain()

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if isinstance(self.target, str):
            upstream_reader, upstream_writer = await asyncio.open_unix_connection(self.target)
        else:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        self._open.add(upstream_writer)

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            sink.transport.abort()

        try:
            await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))
        finally:
            self._open.discard(upstream_writer)
            upstream_writer.transport.abort()


def in_front_of(url: str) -> tuple[DatabaseProxy, str]:
    """A proxy in front of the database at `url` (a server's port, or the embedded one's socket), and
    the URL that reaches the database through it."""
    parsed = make_url(url)
    socket_dir = parsed.query.get("host")
    if isinstance(socket_dir, str) and socket_dir.startswith("/"):
        proxy = DatabaseProxy(f"{socket_dir}/.s.PGSQL.{parsed.port or 5432}")
    else:
        proxy = DatabaseProxy((parsed.host or "127.0.0.1", parsed.port or 5432))
    through = parsed.set(host="127.0.0.1", port=proxy.port, query={}).render_as_string(hide_password=False)
    return proxy, through


async def waiting_on_a_lock(engine: AsyncEngine) -> bool:
    """Whether a session of the database behind `engine` waits for a lock (a row another holds)."""
    async with engine.connect() as conn:
        waiting = await conn.scalar(
            text(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
        )
    return bool(waiting)
