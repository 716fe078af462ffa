"""The engine's HTTP/1.1 client (app/inference/http.py) and the SGLang client's SSE reading, against
a loopback server that answers scripted bytes: framing split anywhere, kept and dropped
connections, a server that goes silent."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable

import msgspec
import pytest

from app.errors import EngineError
from app.inference.engine import Finished, GenerationRequest, TextDelta
from app.inference.http import HTTPClient, HTTPError
from app.inference.sglang import SGLangEngine
from tests.waiting import until

Answer = Callable[[bytes], list[bytes]]  # the request's head and body -> the pieces written back, in turn


class ScriptedServer:
    """Reads one request (head and Content-Length body), writes the next script's pieces with a
    pause between them, then keeps the connection (or closes it, when the script says so)."""

    def __init__(self) -> None:
        self.scripts: list[tuple[Answer, bool]] = []
        self.requests: list[bytes] = []
        self.connections = 0
        self.server: asyncio.Server | None = None
        self.port = 0

    def answer(self, answer: Answer, *, close: bool = False) -> None:
        self.scripts.append((answer, close))

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:  # until the client hangs up, or a script closes
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (int(line[15:]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
                )
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                answer, close = self.scripts.pop(0)
                for piece in answer(request):
                    writer.write(piece)
                    await writer.drain()
                    await asyncio.sleep(0.002)
                if close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()


@pytest.fixture
async def server() -> AsyncIterator[ScriptedServer]:
    s = ScriptedServer()
    await s.start()
    yield s
    await s.stop()


def chunked(*pieces: bytes, head: bytes = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n") -> bytes:
    return head + b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


def split_every(data: bytes, n: int) -> list[bytes]:
    return [data[i : i + n] for i in range(0, len(data), n)]


def fixed(body: bytes, status: str = "200 OK", extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 %s\r\nContent-Length: %d\r\n%s\r\n%s" % (status.encode(), len(body), extra, body)


async def test_chunked_bodies_split_anywhere_arrive_whole_and_the_connection_is_kept(server: ScriptedServer) -> None:
    client = HTTPClient(f"http://127.0.0.1:{server.port}", headers={"Authorization": "Bearer k"})
    raw = chunked(b"hello ", b"chunked ", b"world", head=b"HTTP/1.1 200 OK\r\ntransfer-encoding: Chunked\r\n\r\n")
    server.answer(lambda _: split_every(raw, 3))
    server.answer(lambda _: [fixed(b'{"ok": true}')])
    try:
        assert await client.request("POST", "/generate", b'{"x": 1}', timeout_s=5) == (200, b"hello chunked world")
        assert await client.request("GET", "/health", timeout_s=5) == (200, b'{"ok": true}')
    finally:
        await client.close()
    assert server.connections == 1
    first, second = server.requests
    assert first.startswith(b"POST /generate HTTP/1.1\r\n")
    assert b"\r\nAuthorization: Bearer k\r\n" in first
    assert b"\r\nContent-Length: 8\r\n" in first
    assert first.endswith(b'\r\n\r\n{"x": 1}')
    assert second.startswith(b"GET /health HTTP/1.1\r\n")
    assert b"Content-Length" not in second


async def test_a_body_ended_by_the_connection_is_read_whole_and_the_connection_not_kept(server: ScriptedServer) -> None:
    client = HTTPClient(f"http://127.0.0.1:{server.port}")
    server.answer(lambda _: [b"HTTP/1.1 200 OK\r\n\r\nuntil ", b"the end"], close=True)
    server.answer(lambda _: [fixed(b"again", extra=b"Connection: close\r\n")], close=True)
    server.answer(lambda _: [fixed(b"third")])
    try:
        assert await client.request("GET", "/a", timeout_s=5) == (200, b"until the end")
        assert await client.request("GET", "/b", timeout_s=5) == (200, b"again")
        assert await client.request("GET", "/c", timeout_s=5) == (200, b"third")
    finally:
        await client.close()
    assert server.connections == 3


async def test_after_the_server_closed_an_idle_connection_the_next_request_gets_a_new_one(
    server: ScriptedServer,
) -> None:
    client = HTTPClient(f"http://127.0.0.1:{server.port}")
    server.answer(lambda _: [fixed(b"one")], close=True)  # keep-alive by the headers, closed right after
    server.answer(lambda _: [fixed(b"two")])
    try:
        assert await client.request("GET", "/", timeout_s=5) == (200, b"one")
        await asyncio.sleep(0.05)  # the close reaches the client's idle connection
        assert await client.request("GET", "/", timeout_s=5) == (200, b"two")
    finally:
        await client.close()
    assert server.connections == 2


async def test_a_kept_connection_that_breaks_as_the_request_goes_out_is_retried_once(server: ScriptedServer) -> None:
    client = HTTPClient(f"http://127.0.0.1:{server.port}")
    server.answer(lambda _: [fixed(b"one")])
    server.answer(lambda _: [], close=True)  # read the request, then hang up without a byte
    server.answer(lambda _: [fixed(b"two")])
    try:
        assert await client.request("GET", "/", timeout_s=5) == (200, b"one")
        assert await client.request("GET", "/", timeout_s=5) == (200, b"two")
    finally:
        await client.close()
    assert (server.connections, len(server.requests)) == (2, 3)


async def test_a_body_that_breaks_off_is_an_error_and_its_connection_is_dropped(server: ScriptedServer) -> None:
    client = HTTPClient(f"http://127.0.0.1:{server.port}")
    server.answer(lambda _: [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel"], close=True)
    server.answer(lambda _: [fixed(b"1234567890")[:-4]], close=True)
    server.answer(lambda _: [fixed(b"fine")])
    try:
        with pytest.raises(HTTPError, match="broke off"):
            await client.request("GET", "/", timeout_s=5)
        with pytest.raises(HTTPError, match="broke off"):
            await client.request("GET", "/", timeout_s=5)
        assert await client.request("GET", "/", timeout_s=5) == (200, b"fine")
    finally:
        await client.close()


async def test_a_silent_server_times_out_and_a_refused_connection_is_an_error(server: ScriptedServer) -> None:
    client = HTTPClient(f"http://127.0.0.1:{server.port}")
    server.answer(lambda _: [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"])  # then nothing
    loop = asyncio.get_running_loop()
    began = loop.time()
    try:
        with pytest.raises(HTTPError, match=r"within 0\.3 s"):
            await client.request("GET", "/", timeout_s=0.3)
    finally:
        await client.close()
    assert 0.3 <= loop.time() - began < 2
    with pytest.raises(HTTPError, match="cannot connect"):
        await HTTPClient("http://127.0.0.1:9").request("GET", "/", timeout_s=5)
    server.answer(lambda _: [b"SSH-2.0-OpenSSH\r\n\r\n"])
    with pytest.raises(HTTPError, match="not an HTTP"):
        await HTTPClient(f"http://127.0.0.1:{server.port}").request("GET", "/", timeout_s=5)


# --- the SGLang client's reading of the event stream ------------------------------------------------


def sse(*events: object, sep: bytes = b"\n") -> bytes:
    out = b": a comment line, ignored" + sep + sep
    for event in events:
        data = event if isinstance(event, bytes) else msgspec.json.encode(event)
        out += b"data: " + data + sep + sep
    return out


def meta(n: int, reason: str | None = None) -> dict[str, object]:
    return {"id": "x", "finish_reason": {"type": reason} if reason else None, "prompt_tokens": 40,
            "completion_tokens": n, "cached_tokens": 32, "queue_time": 0.002}  # fmt: skip


def generation() -> GenerationRequest:
    return GenerationRequest(request_id=uuid.uuid4().hex, prompt="Hello", max_tokens=32)


async def collect(engine: SGLangEngine) -> tuple[str, Finished]:
    text, final = "", None
    async for event in engine.generate(generation()):
        if isinstance(event, TextDelta):
            text += event.text
        else:
            final = event
    assert final is not None
    return text, final


@pytest.fixture
def cumulative() -> bytes:
    words = ["Your ", "bill ", "is ", "12.00 ", "EUR ", "higher — ", "因为利息。"]
    events: list[object] = [
        {"text": "".join(words[: i + 1]), "meta_info": meta(i + 1, "stop" if i == len(words) - 1 else None)}
        for i in range(len(words))
    ]
    return sse(*events, b"[DONE]")


@pytest.mark.parametrize(("piece", "sep"), [(3, b"\n"), (7, b"\r\n"), (4096, b"\n")])
async def test_sse_events_split_across_chunks_anywhere_give_the_same_text(
    server: ScriptedServer, cumulative: bytes, piece: int, sep: bytes
) -> None:
    body = cumulative.replace(b"\n", sep)
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    server.answer(lambda _: [head, *(chunked(p, head=b"")[:-5] for p in split_every(body, piece)), b"0\r\n\r\n"])
    engine = SGLangEngine(f"http://127.0.0.1:{server.port}")
    try:
        text, final = await collect(engine)
    finally:
        await engine.close()
    assert text == "Your bill is 12.00 EUR higher — 因为利息。"
    assert (final.finish_reason, final.prompt_tokens, final.cached_tokens, final.completion_tokens) == (
        "stop",
        40,
        32,
        7,
    )
    assert final.queue_ms == pytest.approx(2.0)


async def test_a_stream_cut_before_done_is_an_engine_error_and_the_request_is_aborted(server: ScriptedServer) -> None:
    cut = sse({"text": "Your bill", "meta_info": meta(2)})
    server.answer(lambda _: [chunked(cut)[:-5]], close=True)  # no [DONE], no last chunk: the server went away
    server.answer(lambda _: [fixed(b"{}")])  # the abort, on a new connection
    engine = SGLangEngine(f"http://127.0.0.1:{server.port}")
    try:
        with pytest.raises(EngineError, match="unreachable"):
            await collect(engine)
        await until("the abort request", lambda: len(server.requests) == 2)
    finally:
        await engine.close()
    generate, abort = server.requests
    assert abort.startswith(b"POST /abort_request ")
    assert (
        msgspec.json.decode(abort.partition(b"\r\n\r\n")[2])["rid"]
        == msgspec.json.decode(generate.partition(b"\r\n\r\n")[2])["rid"]
    )


async def test_an_unreadable_event_is_an_engine_error(server: ScriptedServer) -> None:
    server.answer(lambda _: [chunked(sse({"text": 5}, b"[DONE]"))])
    server.answer(lambda _: [fixed(b"{}")])
    engine = SGLangEngine(f"http://127.0.0.1:{server.port}")
    try:
        with pytest.raises(EngineError, match="unreadable event"):
            await collect(engine)
    finally:
        await engine.close()
