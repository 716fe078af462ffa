"""A small HTTP/1.1 keep-alive client pool for load generation (Content-Length bodies, as the service sends).

A few lines of asyncio rather than a general HTTP library, so that on a 2-core machine the load
generator takes as little CPU as possible from the server it measures."""

from __future__ import annotations

import asyncio


class Reply:
    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body


class Pool:
    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def request(self, raw: bytes) -> Reply:
        if self.idle:
            try:
                return await self._send(*self.idle.pop(), raw)
            except (OSError, asyncio.IncompleteReadError):
                pass  # the server closed an idle keep-alive connection: retry once on a new one
        return await self._send(*await asyncio.open_connection(self.host, self.port), raw)

    async def _send(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: bytes) -> Reply:
        writer.write(raw)
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name:
                headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        self.idle.append((reader, writer))
        return Reply(int(lines[0][9:12]), headers, body)

    def close(self) -> None:
        for _, writer in self.idle:
            writer.close()


def post(host: str, port: int, path: str, body: bytes, headers: dict[str, str]) -> bytes:
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", "Content-Type: application/json",
             f"Content-Length: {len(body)}", *(f"{k}: {v}" for k, v in headers.items())]  # fmt: skip
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body
