"""Tests run against a real Postgres: the server at 127.0.0.1:5432 when it is there (or
TEST_DATABASE_URL), else the embedded one. Each run gets a fresh database, migrated by Alembic."""

from __future__ import annotations

import functools
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any
from unittest import mock

import msgspec
import pytest
from click.testing import CliRunner
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.app import create_app
from app.cli import main
from app.data import agents as agent_store
from app.data.agents import create_agent
from app.data.database import create_engine
from app.data.knowledge import import_library
from app.data.staging import ImportReport
from app.data.tenants import create_tenant, issue_api_key, set_limits
from app.domain.knowledge import ArticleIn
from app.inference.embedded import EmbeddedEngine, default_model_path
from app.security import hash_password
from app.settings import Settings
from bench.fakes.sglang_server import RunningFake
from tests.console import PASSWORD
from tests.db_proxy import DatabaseProxy, in_front_of
from tests.factories import customer, document, import_document
from tests.postgres import new_database


@pytest.fixture(scope="session")
def database_url() -> Iterator[str]:
    with new_database() as url:
        yield url


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url)
    yield engine
    await engine.dispose()


class Tenant(msgspec.Struct, kw_only=True):
    id: int
    slug: str
    key: str


@pytest.fixture
def make_tenant(engine: AsyncEngine) -> Callable[..., Awaitable[Tenant]]:
    """A new tenant with its own API key: tests never share data, so they never clean up."""

    async def make(priority_class: str = "standard") -> Tenant:
        slug = f"bank-{uuid.uuid4().hex[:10]}"
        async with engine.begin() as conn:
            tenant = await create_tenant(conn, slug, f"Bank {slug}", priority_class)
            key = await issue_api_key(conn, tenant, "test")
        return Tenant(id=tenant, slug=slug, key=key)

    return make


@pytest.fixture
def load(engine: AsyncEngine) -> Callable[[dict[str, Any]], Awaitable[ImportReport]]:
    """Import a document (the JSON exchange format, as a dict) in one transaction."""

    async def run(doc: dict[str, Any]) -> ImportReport:
        async with engine.begin() as conn:
            return await import_document(conn, doc)

    return run


@functools.cache
def _password_hash(password: str) -> str:
    """One real scrypt hash per password for every test bank's agents: the KDF is ~0.4 s of CPU a call,
    and the banks need not differ in their salts (signing in still checks the hash)."""
    return hash_password(password)


@pytest.fixture
def make_bank(
    make_tenant: Callable[..., Awaitable[Tenant]],
    load: Callable[[dict[str, Any]], Awaitable[ImportReport]],
    engine: AsyncEngine,
) -> Callable[..., Awaitable[Tenant]]:
    """A new bank: its customers (default: Ann, C-1001 with A-1, the 12.00 gym story), its agents
    (each "<Name> Agent", password tests/console.py's PASSWORD), its help articles and its limits."""

    async def make(
        *customers: dict[str, Any],
        priority_class: str = "interactive",
        agents: tuple[str, ...] = (),
        library: tuple[ArticleIn, ...] = (),
        limits: dict[str, Any] | None = None,
    ) -> Tenant:
        tenant = await make_tenant(priority_class)
        await load(document(tenant.slug, list(customers) or [customer()]))
        async with engine.begin() as conn:
            with mock.patch.object(agent_store, "hash_password", _password_hash):
                for name in agents:
                    await create_agent(conn, tenant.id, name, f"{name.title()} Agent", PASSWORD)
            if library:
                await import_library(conn, tenant.id, list(library))
            if limits:
                await set_limits(conn, tenant.slug, limits)
        return tenant

    return make


@pytest.fixture
async def bank(request: pytest.FixtureRequest, make_bank: Callable[..., Awaitable[Tenant]]) -> Tenant:
    """The test's bank: Ann (C-1001, A-1: her bill is 12.00 higher), or what the `bank` marker on the
    test or its module says, e.g. `pytestmark = pytest.mark.bank(customer(), bo, agents=("ana",))`
    (make_bank's arguments)."""
    marker = request.node.get_closest_marker("bank")
    return await make_bank(*(marker.args if marker else ()), **(marker.kwargs if marker else {}))


@pytest.fixture
async def client(database_url: str) -> AsyncIterator[AsyncTestClient[Any]]:
    # Deterministic answers: these tests check exact numbers and texts. Model answers have their own.
    # The overload guard is tested in test_overload.py; here parallel or slow requests must not be shed.
    settings = Settings.from_env({"ENGINE": "off", "MAX_IN_FLIGHT": "1000", "MAX_LOOP_LAG_MS": "0"})
    app = create_app(settings, database_url)
    async with AsyncTestClient(app=app) as client:
        yield client


@pytest.fixture
def cli(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    monkeypatch.setenv("DATABASE_URL", database_url)
    runner = CliRunner()
    return lambda *args: runner.invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="session")
def sglang_server() -> Iterator[RunningFake]:
    server = RunningFake()
    yield server
    server.stop()


@pytest.fixture
def fake_sglang(sglang_server: RunningFake) -> RunningFake:
    sglang_server.reset()
    return sglang_server


@pytest.fixture(scope="session")
async def embedded_engine() -> AsyncIterator[EmbeddedEngine]:
    """The real embedded engine with the default model, loaded once (about half a second)."""
    engine = EmbeddedEngine(default_model_path(), parallel=2)
    yield engine
    await engine.close()


@pytest.fixture
def database_proxy(database_url: str) -> Iterator[tuple[DatabaseProxy, str]]:
    """A proxy in front of the test database that can cut the connections through it, and the URL
    that goes through it."""
    running, through = in_front_of(database_url)
    yield running, through
    running.close()
