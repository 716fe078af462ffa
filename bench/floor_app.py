"""The floor under every request on this machine, for `bench overhead`: what a service pays before
any code of its own runs, under the same uvicorn settings as `bill-assistant serve`.

    FLOOR=http|write|litestar DATABASE_URL=... python -m uvicorn bench.floor_app:app --loop uvloop --http httptools

Every variant answers POST /v1/explanations (the raw ones any request) with the same JSON body, the size
of an answer:
- http: nothing else (the HTTP server and the ASGI interface);
- write: after one durable write, as every answered request leaves its audit row (an INSERT on a
  pooled asyncpg connection, committed synchronously: one round trip and one WAL flush);
- litestar: the write in a Litestar route handler that reads the JSON body (the framework's own cost).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
from litestar import Litestar, Response, get, post

from app.data.connecting import asyncpg_dsn

FLOOR = os.environ.get("FLOOR", "http")
BODY = b'{"explanation": "' + b"x" * 1500 + b'"}'
_CREATE = "CREATE TABLE IF NOT EXISTS floor_writes (id bigserial PRIMARY KEY, body jsonb NOT NULL)"
# asyncpg's own $1, on purpose: the floor is the bare driver, with nothing of the service's between.
_INSERT = "INSERT INTO floor_writes (body) VALUES (CAST($1 AS jsonb))"
_HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())]
_pool: list[asyncpg.Pool] = []  # created at start-up, as the service creates its pools


async def _start() -> None:
    if FLOOR != "http":
        pool = await asyncpg.create_pool(asyncpg_dsn(os.environ["DATABASE_URL"]), min_size=4, max_size=4)
        await pool.execute(_CREATE)
        _pool.append(pool)


async def _write() -> None:
    async with _pool[0].acquire() as conn:
        await conn.execute(_INSERT, BODY.decode())


async def _asgi(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] == "lifespan.startup":
            await _start()
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    while (await receive()).get("more_body"):
        pass
    if FLOOR == "write":
        await _write()
    await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
    await send({"type": "http.response.body", "body": BODY})


@post("/v1/explanations", status_code=200)
async def _handler(data: dict[str, Any]) -> Response[bytes]:
    await _write()
    return Response(BODY, media_type="application/json")


@get("/ready")
async def _ready() -> str:
    return "ready"


@asynccontextmanager
async def _lifespan(_: Litestar) -> AsyncIterator[None]:
    await _start()
    yield


app: Any = Litestar([_handler, _ready], lifespan=[_lifespan]) if FLOOR == "litestar" else _asgi
