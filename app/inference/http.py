"""A small HTTP/1.1 client with a keep-alive pool, for the engine's streaming API.

The engine's stream is the hot path of every model answer: httpx (with httpcore and anyio under it)
spent more CPU per answer on it than the rest of the client. This one does only what the engine
client needs — one origin (http or https), requests with a body or none, responses framed by
Content-Length, chunked transfer encoding or the connection's end, read whole or as the bytes come —
on asyncio streams. A connection goes back to the pool only once its response was read to the end
and the server did not ask to close it; an idle connection the server has closed is dropped when
next wanted, and a request that met such a connection before any byte of its answer came is sent
once more on a new one. Each request has a deadline: past it the connection is cut and the read
fails with HTTPError.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

MAX_IDLE = 64  # idle connections kept for reuse
HEAD_LIMIT = 64 * 1024  # the longest status line and headers accepted


class HTTPError(Exception):
    """The server could not be reached, cut the connection, timed out or answered something that is not HTTP."""


class _Connection:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    def alive(self) -> bool:
        """Still open on both sides, with nothing unasked-for waiting in it (no round trip). A
        server that closes an idle connection may first send something (a 408): the reader's
        buffer, which asyncio does not expose, holds it then."""
        unread = getattr(self.reader, "_buffer", b"")
        return not self.writer.is_closing() and not self.reader.at_eof() and not unread

    def close(self) -> None:
        self.writer.transport.abort()


class Response:
    """Status, headers (lower-case names) and the body, read once: `read()` or `chunks()`."""

    __slots__ = ("_chunked", "_conn", "_left", "finished", "headers", "keep_alive", "status")

    def __init__(self, conn: _Connection, status: int, headers: dict[str, str], keep_alive: bool) -> None:
        self._conn, self.status, self.headers = conn, status, headers
        self._chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length")
        # Framed by neither: the body ends with the connection, which cannot be kept then.
        self._left = -1 if self._chunked or length is None else int(length)
        self.keep_alive = keep_alive and (self._chunked or length is not None)
        self.finished = False  # the whole body has been read

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive, in pieces of any size."""
        reader = self._conn.reader
        try:
            if self._chunked:
                # Whatever has arrived, unframed in one pass: a streaming engine writes an HTTP chunk
                # per token, and a burst of them is handed on as one piece, not one await per chunk.
                buffered, ended = b"", False
                while not ended:
                    data = await reader.read(65536)
                    if not data:
                        raise asyncio.IncompleteReadError(buffered, None)
                    pieces, buffered, ended = _take_chunks(buffered + data)
                    if pieces:
                        yield b"".join(pieces)
                if buffered:  # bytes after the body's end: not a connection to reuse
                    self.keep_alive = False
            elif self._left >= 0:
                while self._left > 0:
                    data = await reader.read(min(self._left, 65536))
                    if not data:
                        raise asyncio.IncompleteReadError(b"", self._left)
                    self._left -= len(data)
                    yield data
            else:
                while data := await reader.read(65536):
                    yield data
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, OSError) as exc:
            raise HTTPError(f"the response body broke off: {type(exc).__name__}: {exc}") from exc
        self.finished = True

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])

    def close(self) -> None:
        """Hang up: the connection is cut, and a read still waiting on the body fails with HTTPError."""
        self._conn.close()


def _take_chunks(data: bytes) -> tuple[list[bytes], bytes, bool]:
    """The complete chunks at the start of a chunked body's bytes, the bytes left after them, and
    whether the body has ended (its last chunk and trailer are in)."""
    pieces: list[bytes] = []
    at = 0
    while (eol := data.find(b"\r\n", at)) >= 0:
        size = int(data[at:eol].split(b";", 1)[0], 16)
        if size < 0:
            raise ValueError(f"chunk size {size}")
        if size == 0:
            end = data.find(b"\r\n\r\n", eol)  # the (empty, or fields') trailer ends with a blank line
            if end < 0:
                break
            return pieces, data[end + 4 :], True
        start, stop = eol + 2, eol + 2 + size
        if len(data) < stop + 2:
            break
        if data[stop : stop + 2] != b"\r\n":
            raise ValueError("a chunk not followed by CRLF")
        pieces.append(data[start:stop])
        at = stop + 2
    if len(data) - at > HEAD_LIMIT and data.find(b"\r\n", at) < 0:
        raise ValueError("a chunk size line without an end")
    return pieces, data[at:], False


class HTTPClient:
    def __init__(self, base_url: str, *, headers: dict[str, str] | None = None, connect_timeout_s: float = 3.0) -> None:
        url = urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self._host = url.hostname
        self._port = url.port or (443 if url.scheme == "https" else 80)
        self._ssl = ssl.create_default_context() if url.scheme == "https" else None
        self._prefix = url.path.rstrip("/")
        default_port = url.port is None or url.port == (443 if url.scheme == "https" else 80)
        host_header = url.hostname if default_port else f"{url.hostname}:{url.port}"
        fixed = {"Host": host_header, "Connection": "keep-alive", **(headers or {})}
        self._fixed_head = "".join(f"{name}: {value}\r\n" for name, value in fixed.items())
        self._connect_timeout_s = connect_timeout_s
        self._idle: list[_Connection] = []
        self._closed = False

    @asynccontextmanager
    async def stream(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        timeout_s: float,
        content_type: str = "application/json",
    ) -> AsyncIterator[Response]:
        """The response, its head read; its body is the caller's to read. A response not read to
        its end (an error, a caller who stopped) takes its connection with it when it closes."""
        loop = asyncio.get_running_loop()
        timed_out = False
        conn: _Connection | None = None

        def cut() -> None:
            nonlocal timed_out
            timed_out = True
            if conn is not None:
                conn.close()

        deadline = loop.call_later(timeout_s, cut)
        response: Response | None = None
        try:
            head = self._head(method, path, body, content_type)
            for attempt in (1, 2):
                conn, reused = await self._connection()
                if timed_out:  # the deadline passed while connecting
                    raise HTTPError("timed out connecting")
                try:
                    response = await self._send(conn, head, body)
                    break
                except HTTPError:
                    conn.close()
                    # A kept connection the server closed as this request was sent: once more, on a new one.
                    if not reused or attempt == 2 or timed_out:
                        raise
            assert response is not None
            yield response
        except HTTPError as exc:
            if timed_out:
                raise HTTPError(f"no complete answer within {timeout_s:g} s") from exc
            raise
        finally:
            deadline.cancel()
            if conn is not None:
                if response is not None and response.finished and response.keep_alive and not timed_out:
                    self._release(conn)
                else:
                    conn.close()

    async def request(
        self, method: str, path: str, body: bytes | None = None, *, timeout_s: float
    ) -> tuple[int, bytes]:
        """A whole response: its status and body."""
        async with self.stream(method, path, body, timeout_s=timeout_s) as response:
            return response.status, await response.read()

    def _head(self, method: str, path: str, body: bytes | None, content_type: str) -> bytes:
        head = f"{method} {self._prefix}{path} HTTP/1.1\r\n{self._fixed_head}"
        if body is not None:
            head += f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
        return (head + "\r\n").encode("latin-1")

    async def _connection(self) -> tuple[_Connection, bool]:
        """An idle connection still open, or a new one; and whether it was kept from before."""
        if self._closed:
            raise HTTPError("the client is closed")
        while self._idle:
            conn = self._idle.pop()
            if conn.alive():
                return conn, True
            conn.close()
        try:
            async with asyncio.timeout(self._connect_timeout_s):
                reader, writer = await asyncio.open_connection(self._host, self._port, ssl=self._ssl, limit=HEAD_LIMIT)
        except (OSError, TimeoutError) as exc:
            raise HTTPError(f"cannot connect to {self._host}:{self._port}: {type(exc).__name__}: {exc}") from exc
        return _Connection(reader, writer), False

    async def _send(self, conn: _Connection, head: bytes, body: bytes | None) -> Response:
        try:
            conn.writer.write(head + body if body else head)
            raw = await conn.reader.readuntil(b"\r\n\r\n")
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            raise HTTPError(f"no answer: {type(exc).__name__}: {exc}") from exc
        lines = raw.decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        if not version.startswith("HTTP/1.") or not rest[:3].isdigit():
            raise HTTPError(f"not an HTTP/1.x response: {lines[0][:100]!r}")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        connection = headers.get("connection", "").lower()
        keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
        return Response(conn, int(rest[:3]), headers, keep_alive)

    def _release(self, conn: _Connection) -> None:
        if self._closed or len(self._idle) >= MAX_IDLE:
            conn.close()
        else:
            self._idle.append(conn)

    async def close(self) -> None:
        self._closed = True
        while self._idle:
            self._idle.pop().close()
