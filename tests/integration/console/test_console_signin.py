"""Console sign-in throttling over real HTTP (a threaded server, so attempts really run in parallel):
attempts are counted before the password is checked, per account with a growing back-off and per
client address across usernames; a throttled attempt is refused without a password check."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from structlog.testing import capture_logs

import app.data.agents
from app.api.app import create_app
from app.api.console.session import LOGIN_CSRF_COOKIE
from app.data.signin import SigninLimits, account_key, client_key
from app.security import check_password
from app.settings import Settings
from tests.console import PASSWORD, csrf_of
from tests.servers import ThreadedServer

WRONG = "guess-guess-guess"
pytestmark = pytest.mark.bank(agents=("ana", "bo"))
WRONG_LOGIN = "Sign-in failed: the bank, username and password do not match an active agent."


class Checks:
    """Counts the password checks (app.security.check_password as the agents module calls it)."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def wrap(self, check: Any) -> Any:
        def counted(password: str, stored: str | None) -> bool:
            with self._lock:
                self.count += 1
            return bool(check(password, stored))

        return counted


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> Checks:
    counter = Checks()
    monkeypatch.setattr(app.data.agents, "check_password", counter.wrap(check_password))
    return counter


@pytest.fixture
def slug(bank: Any) -> str:
    return str(bank.slug)


@pytest.fixture
def serve(database_url: str) -> Iterator[Callable[..., ThreadedServer]]:
    """Start the service with these SIGNIN_* variables; stopped after the test."""
    running: list[ThreadedServer] = []

    def start(**signin: str) -> ThreadedServer:
        # Many sign-ins at once on purpose: the per-process overload guard is not what is tested here.
        env = {"ENGINE": "off", "COOKIE_SECURE": "0", "BATCH_WORKER": "0", "MAX_IN_FLIGHT": "1000", **signin}
        running.append(ThreadedServer(create_app(Settings.from_env(env), database_url)))
        return running[-1]

    yield start
    for server in running:
        server.stop()


@asynccontextmanager
async def browser(server: ThreadedServer, address: str) -> AsyncIterator[httpx.AsyncClient]:
    """A client connecting from this loopback address (the service throttles per address)."""
    transport = httpx.AsyncHTTPTransport(local_address=address)
    async with httpx.AsyncClient(base_url=server.url, transport=transport, timeout=30) as client:
        form = await client.get("/console/login")
        # The double-submit pair, sent as is with every attempt (each 401 page sets a new pair, which
        # parallel attempts would race for in the cookie jar).
        client.headers["x-test-csrf"] = csrf_of(form)
        client.headers["cookie"] = f"{LOGIN_CSRF_COOKIE}={form.cookies[LOGIN_CSRF_COOKIE]}"
        yield client


async def sign_in(client: httpx.AsyncClient, slug: str, username: str, password: str) -> int:
    form = {"csrf_token": client.headers["x-test-csrf"], "tenant": slug, "username": username, "password": password}
    response = await client.post("/console/login", data=form, follow_redirects=False)
    if response.status_code == 401:
        assert WRONG_LOGIN in response.text  # a refusal reads exactly like a wrong password
    return response.status_code


async def end_window(engine: AsyncEngine, key: str) -> None:
    async with engine.begin() as conn:
        await conn.execute(text("UPDATE signin_throttle SET until = now() - interval '1 s' WHERE key = :k"), {"k": key})


async def throttle_row(engine: AsyncEngine, key: str) -> tuple[int, float | None] | None:
    """(failures, seconds of its window) of a key's row; None without one."""
    async with engine.begin() as conn:
        row = (
            await conn.execute(
                text("SELECT failures, extract(epoch FROM until - updated_at) FROM signin_throttle WHERE key = :k"),
                {"k": key},
            )
        ).first()
    if row is None:
        return None
    return row[0], None if row[1] is None else float(row[1])


def test_the_limits_default_to_the_settings_defaults() -> None:
    from app.api.console.routes import signin_limits

    assert signin_limits(Settings.from_env({})) == SigninLimits()
    assert SigninLimits() == SigninLimits(
        max_failures=5, backoff_s=60.0, backoff_max_s=900.0, client_attempts=20, client_window_s=60.0
    )


async def test_parallel_guesses_never_check_more_passwords_than_the_limit(
    serve: Callable[..., ThreadedServer], slug: str, checks: Checks, engine: AsyncEngine
) -> None:
    server = serve(SIGNIN_CLIENT_ATTEMPTS="1000")
    async with browser(server, "127.0.0.21") as client:
        statuses = await asyncio.gather(*(sign_in(client, slug, "ana", f"{WRONG}-{i}") for i in range(30)))
        assert statuses == [401] * 30
        assert checks.count == 5  # SIGNIN_MAX_FAILURES: the other 25 were refused unchecked
        # The right password among parallel wrong ones, past the limit: refused, unchecked.
        guesses = [f"{WRONG}-{i}" for i in range(20)]
        guesses[15] = PASSWORD
        statuses = await asyncio.gather(*(sign_in(client, slug, "ana", guess) for guess in guesses))
        assert statuses == [401] * 20
        assert checks.count == 5
    assert await throttle_row(engine, account_key(slug, "ana")) == (5, 60.0)


async def test_the_account_back_off_grows_and_the_right_password_signs_in_after_it(
    serve: Callable[..., ThreadedServer], slug: str, checks: Checks, engine: AsyncEngine
) -> None:
    server = serve(
        SIGNIN_MAX_FAILURES="3", SIGNIN_BACKOFF_S="10", SIGNIN_BACKOFF_MAX_S="40", SIGNIN_CLIENT_ATTEMPTS="1000"
    )
    key = account_key(slug, "ana")
    async with browser(server, "127.0.0.22") as client:
        for _ in range(2):
            assert await sign_in(client, slug, "ana", WRONG) == 401
        windows = []
        for failures in range(3, 7):
            assert await sign_in(client, slug, "ana", WRONG) == 401
            assert checks.count == failures
            row = await throttle_row(engine, key)
            assert row is not None
            windows.append(row[1])
            # Within the window even the right password is refused, without a check.
            assert await sign_in(client, slug, "ana", PASSWORD) == 401
            assert checks.count == failures
            await end_window(engine, key)
        assert windows == [10.0, 20.0, 40.0, 40.0]  # doubling from SIGNIN_BACKOFF_S, capped at SIGNIN_BACKOFF_MAX_S
        # Past the window the right password signs in, and the count starts again.
        assert await sign_in(client, slug, "ana", PASSWORD) == 303
        assert checks.count == 7
    assert await throttle_row(engine, key) is None


async def test_an_unknown_username_is_held_back_like_a_known_one(
    serve: Callable[..., ThreadedServer], slug: str, checks: Checks, engine: AsyncEngine
) -> None:
    server = serve(SIGNIN_MAX_FAILURES="3", SIGNIN_CLIENT_ATTEMPTS="1000")
    async with browser(server, "127.0.0.23") as client:
        for name in ("ana", "nobody"):
            assert [await sign_in(client, slug, name, WRONG) for _ in range(4)] == [401] * 4
        assert checks.count == 6  # three each, the fourth refused unchecked
    assert await throttle_row(engine, account_key(slug, "nobody")) == await throttle_row(
        engine, account_key(slug, "ana")
    )
    assert await throttle_row(engine, account_key(slug, "ana")) == (3, 60.0)


async def test_a_throttled_client_is_refused_across_usernames_without_a_check_and_recovers(
    serve: Callable[..., ThreadedServer], slug: str, checks: Checks, engine: AsyncEngine
) -> None:
    server = serve(SIGNIN_CLIENT_ATTEMPTS="3", SIGNIN_CLIENT_WINDOW_S="30")
    async with browser(server, "127.0.0.24") as client, browser(server, "127.0.0.25") as other:
        # One success gives its attempt back: three failures still follow before the throttle.
        assert await sign_in(client, slug, "bo", PASSWORD) == 303
        assert [await sign_in(client, slug, name, WRONG) for name in ("ana", "nobody", "bo")] == [401] * 3
        assert checks.count == 4
        failures, left = await throttle_row(engine, client_key("127.0.0.24")) or (0, None)
        assert failures == 3
        assert left is not None
        assert 20 < left <= 30  # the window started at the first attempt (SIGNIN_CLIENT_WINDOW_S)
        # Every username, known or not, right password or not: refused, unchecked.
        for name, password in (("ana", PASSWORD), ("bo", PASSWORD), ("nobody", WRONG), ("cy", WRONG)):
            assert await sign_in(client, slug, name, password) == 401
        assert checks.count == 4
        # Parallel attempts from the same client are refused as well.
        statuses = await asyncio.gather(*(sign_in(client, slug, "ana", f"{WRONG}-{i}") for i in range(10)))
        assert statuses == [401] * 10
        assert checks.count == 4
        # Another address is not held back (and neither are the accounts: ana had one failure).
        assert await sign_in(other, slug, "ana", PASSWORD) == 303
        assert checks.count == 5
        # After the window, the client signs in again.
        await end_window(engine, client_key("127.0.0.24"))
        assert await sign_in(client, slug, "bo", PASSWORD) == 303
        assert checks.count == 6
    assert await throttle_row(engine, client_key("127.0.0.24")) == (0, 30.0)


async def test_parallel_guesses_from_one_client_check_no_more_than_its_limit(
    serve: Callable[..., ThreadedServer], slug: str, checks: Checks
) -> None:
    server = serve(SIGNIN_CLIENT_ATTEMPTS="7", SIGNIN_MAX_FAILURES="1000")
    async with browser(server, "127.0.0.26") as client:
        names = [f"user{i}" for i in range(30)]  # a different username each: only the client limit applies
        statuses = await asyncio.gather(*(sign_in(client, slug, name, WRONG) for name in names))
    assert statuses == [401] * 30
    assert checks.count == 7


async def test_every_attempt_is_recorded_with_its_client_and_outcome(
    serve: Callable[..., ThreadedServer], slug: str
) -> None:
    server = serve(SIGNIN_MAX_FAILURES="2", SIGNIN_CLIENT_ATTEMPTS="1000")
    with capture_logs() as events:
        async with browser(server, "127.0.0.27") as client:
            for name, password in (("ana", WRONG), ("ana", WRONG), ("ana", PASSWORD), ("bo", PASSWORD)):
                await sign_in(client, slug, name, password)
    records = [e for e in events if e.get("event") == "console_signin"]
    assert [(e["client"], e["tenant"], e["outcome"]) for e in records] == [
        ("127.0.0.27", slug, "refused"),
        ("127.0.0.27", slug, "refused"),
        ("127.0.0.27", slug, "throttled"),  # ana's back-off: the right password, unchecked
        ("127.0.0.27", slug, "signed_in"),
    ]
    assert [e["account"] for e in records] == [account_key(slug, "ana")] * 3 + [account_key(slug, "bo")]
    assert [e["agent_id"] is None for e in records] == [True, True, True, False]
    assert "ana" not in str(records)  # the username only as its digest
