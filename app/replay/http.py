"""A small HTTP/1.1 keep-alive client pool for load generation: Content-Length bodies, and chunked ones
(the chat API's event stream), each chunk handed to a callback as it arrives.

A few lines of asyncio rather than a general HTTP library, so that on a 2-core machine the load
generator takes as little CPU as possible from the server it measures."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class Reply:
    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body


class Pool:
    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def request(self, raw: bytes, on_chunk: Callable[[bytes], None] | None = None) -> Reply:
        if self.idle:
            try:
                return await self._send(*self.idle.pop(), raw, on_chunk)
            except (OSError, asyncio.IncompleteReadError):
                pass  # the server closed an idle keep-alive connection: retry once on a new one
        return await self._send(*await asyncio.open_connection(self.host, self.port), raw, on_chunk)

    async def _send(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        raw: bytes,
        on_chunk: Callable[[bytes], None] | None,
    ) -> Reply:
        writer.write(raw)
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name:
                headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding") == "chunked":
            body = b""
            while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
                chunk = (await reader.readexactly(size + 2))[:-2]
                body += chunk
                if on_chunk is not None:
                    on_chunk(chunk)
            await reader.readuntil(b"\r\n")  # the end of the (empty) trailer
        else:
            body = await reader.readexactly(int(headers.get("content-length", "0")))
        self.idle.append((reader, writer))
        return Reply(int(lines[0][9:12]), headers, body)

    def close(self) -> None:
        for _, writer in self.idle:
            writer.close()


def post(host: str, port: int, path: str, body: bytes, headers: dict[str, str]) -> bytes:
    lines = [
        f"POST {path} HTTP/1.1",
        f"Host: {host}:{port}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body
