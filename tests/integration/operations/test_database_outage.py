"""The database out of reach: every route answers 503 `database_unavailable` with Retry-After (the
console a 503 page), /ready says so, and once the database is back the same requests succeed without
restarting the app. A bad statement stays a 500. An account whose stored rows cannot be read is a
422 `unreadable_data` for that account only."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import asyncpg
import httpx
import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ProgrammingError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from app.api.app import create_app
from app.data import admission, connecting, database, driver_pool
from app.data.agents import create_agent
from app.data.database import READ_ONLY_MESSAGE, autocommit, create_engine
from app.data.driver_pool import DriverPool
from app.data.tenants import create_tenant, issue_api_key, set_limits
from app.domain.priority import TenantLimits
from app.errors import DatabaseUnavailable
from app.settings import Settings
from tests.console import PASSWORD, sign_in
from tests.db_proxy import DatabaseProxy
from tests.factories import account, customer, document, import_document
from tests.postgres import admin_url, new_database
from tests.servers import free_port, start_service, wait_until_healthy

QUESTION = "Why is my bill higher than last month?"
ASK = {"account_ref": "A-1", "question": QUESTION, "as_of": "2026-11-10"}
DOWN = {"status": 503, "error": "database_unavailable", "message": "the database is unavailable; try again shortly"}
Client = AsyncTestClient[Any]


async def _admin(statement: str) -> None:
    engine = create_async_engine(admin_url(), isolation_level="AUTOCOMMIT")
    async with engine.connect() as conn:
        await conn.execute(text(statement))
    await engine.dispose()


class Outage:
    """A database of its own, which this test makes refuse connections and then accept them again."""

    def __init__(self, name: str, url: str) -> None:
        self.name, self.url = name, url
        self.slug, self.key = f"bank-{uuid.uuid4().hex[:10]}", ""

    async def seed(self) -> None:
        engine = create_engine(self.url)
        async with engine.begin() as conn:
            tenant = await create_tenant(conn, self.slug, "Outage Bank", "interactive")
            self.key = await issue_api_key(conn, tenant, "test")
            await import_document(conn, document(self.slug))
            await create_agent(conn, tenant, "ana", "Ana Agent", PASSWORD)
        await engine.dispose()

    async def refuse_connections(self) -> None:
        """New connections refused, and every open one (the app's pool) killed."""
        await _admin(f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS false')
        await _admin(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            f"WHERE datname = '{self.name}' AND pid <> pg_backend_pid()"
        )

    async def accept_connections(self) -> None:
        await _admin(f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS true')


@pytest.fixture(scope="module")
def outage_url() -> Iterator[tuple[str, str]]:
    with new_database() as url:
        name = str(make_url(url).database)
        yield name, url
        asyncio.run(_admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true'))


@pytest.fixture
async def outage(outage_url: tuple[str, str]) -> AsyncIterator[Outage]:
    db = Outage(*outage_url)
    await db.seed()
    yield db
    await db.accept_connections()  # whatever the test did


def _settings(**extra: str) -> Settings:
    env = {"ENGINE": "off", "SESSION_SECRET": "test-secret", "COOKIE_SECURE": "0", "BATCH_WORKER": "0"}
    return Settings.from_env(env | extra)


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def _requests(client: Client, key: str, token: str, job_id: str) -> dict[str, httpx.Response]:
    return {
        "explanation": await client.post("/v1/explanations", json=ASK, headers=_auth(key)),
        "chat": await client.post("/v1/chat", json=ASK, headers=_auth(token)),
        "job": await client.get(f"/v1/jobs/{job_id}", headers=_auth(key)),
        "batch": await client.post("/v1/explanations:batch", json={"items": [ASK]}, headers=_auth(key)),
        "console": await client.get("/console/accounts/A-1"),
        "ready": await client.get("/ready"),
    }


async def test_database_outage_is_503_with_retry_after_and_recovers_without_a_restart(outage: Outage) -> None:
    async with AsyncTestClient(app=create_app(_settings(API_KEY_CACHE_TTL="0"), outage.url)) as client:
        session = await client.post("/v1/sessions", json={"customer_ref": "C-1001"}, headers=_auth(outage.key))
        assert session.status_code == 201, session.text
        token = session.json()["token"]
        job = await client.post("/v1/explanations:batch", json={"items": [ASK]}, headers=_auth(outage.key))
        assert job.status_code == 202, job.text
        job_id = job.json()["job_id"]
        assert (await sign_in(client, outage.slug)).status_code == 303
        before = await _requests(client, outage.key, token, job_id)
        assert {name: r.status_code for name, r in before.items()} == {
            "explanation": 200, "chat": 200, "job": 200, "batch": 202, "console": 200, "ready": 200
        }  # fmt: skip

        await outage.refuse_connections()
        down = await _requests(client, outage.key, token, job_id)
        for name in ("explanation", "chat", "job", "batch"):
            assert (name, down[name].status_code, down[name].json()) == (name, 503, DOWN)
            assert down[name].headers["retry-after"] == "5", name
        assert down["console"].status_code == 503
        assert down["console"].headers["retry-after"] == "5"
        assert down["console"].headers["content-type"].startswith("text/html")
        assert "The database cannot be reached just now. Try again in 5 s." in down["console"].text
        assert down["ready"].status_code == 503
        assert down["ready"].headers["retry-after"] == "5"
        assert down["ready"].json() == {
            "status": "unavailable", "database": "unavailable", "message": DOWN["message"]
        }  # fmt: skip

        await outage.accept_connections()
        after = await _requests(client, outage.key, token, job_id)
        assert {name: r.status_code for name, r in after.items()} == {
            "explanation": 200, "chat": 200, "job": 200, "batch": 202, "console": 200, "ready": 200
        }  # fmt: skip
        assert after["explanation"].json()["totals"] == before["explanation"].json()["totals"]
        assert after["ready"].json()["database"] == "ok"


async def test_the_answer_pipeline_itself_turns_a_lost_database_into_503(outage: Outage) -> None:
    """Keys cached, so authentication does not touch the database: the history query meets the outage."""
    async with AsyncTestClient(app=create_app(_settings(API_KEY_CACHE_TTL="600"), outage.url)) as client:
        session = await client.post("/v1/sessions", json={"customer_ref": "C-1001"}, headers=_auth(outage.key))
        token = session.json()["token"]
        assert (await client.post("/v1/explanations", json=ASK, headers=_auth(outage.key))).status_code == 200
        assert (await client.post("/v1/chat", json=ASK, headers=_auth(token))).status_code == 200

        await outage.refuse_connections()
        explanation = await client.post("/v1/explanations", json=ASK, headers=_auth(outage.key))
        chat = await client.post("/v1/chat", json=ASK, headers=_auth(token))
        assert (explanation.status_code, explanation.json(), explanation.headers["retry-after"]) == (503, DOWN, "5")
        # Before the stream starts: a status and a JSON body, not an event.
        assert (chat.status_code, chat.json(), chat.headers["retry-after"]) == (503, DOWN, "5")

        await outage.accept_connections()
        assert (await client.post("/v1/explanations", json=ASK, headers=_auth(outage.key))).status_code == 200
        assert (await client.post("/v1/chat", json=ASK, headers=_auth(token))).status_code == 200


async def test_a_failing_statement_is_still_a_500(engine: AsyncEngine) -> None:
    """Only connection failures are 'unavailable': a bad statement on a live connection is a bug."""

    with pytest.raises(ProgrammingError):
        async with autocommit(engine) as conn:
            await conn.execute(text("SELECT * FROM no_such_table"))


# -- stored data that cannot be read ---------------------------------------------------------------


@pytest.fixture
async def unreadable_bank(make_bank: Any, engine: AsyncEngine) -> Any:
    """Ann's A-1 is fine; Bo's B-1 has a statement due 'infinity' (written before the importer refused it)."""
    bo = customer("C-2002", accounts=[account("B-1")]) | {"name": "Bo"}
    tenant = await make_bank(customer(), bo, priority_class="standard", agents=("ana",))
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "UPDATE statements SET due_date = 'infinity' WHERE tenant_id = :t AND account_id = "
                "(SELECT id FROM accounts WHERE tenant_id = :t AND ref = 'B-1')"
            ),
            {"t": tenant.id},
        )
    return tenant


UNREADABLE = (
    "account 'B-1' has stored data that cannot be read: Invalid RFC3339 encoded date - at `$.statements[0].due_date`"
)


async def test_an_unreadable_account_is_422_for_that_account_only(database_url: str, unreadable_bank: Any) -> None:
    async with AsyncTestClient(app=create_app(_settings(), database_url)) as client:
        bad = await client.post(
            "/v1/explanations", json=ASK | {"account_ref": "B-1"}, headers=_auth(unreadable_bank.key)
        )
        assert bad.status_code == 422
        assert bad.json() == {"status": 422, "error": "unreadable_data", "message": UNREADABLE}
        good = await client.post("/v1/explanations", json=ASK, headers=_auth(unreadable_bank.key))
        assert good.status_code == 200

        session = await client.post("/v1/sessions", json={"customer_ref": "C-2002"}, headers=_auth(unreadable_bank.key))
        chat = await client.post("/v1/chat", json=ASK | {"account_ref": "B-1"}, headers=_auth(session.json()["token"]))
        assert (chat.status_code, chat.json()) == (
            422,
            {"status": 422, "error": "unreadable_data", "message": UNREADABLE},
        )

        assert (await sign_in(client, unreadable_bank.slug)).status_code == 303
        page = await client.get("/console/accounts/B-1")
        assert page.status_code == 422
        assert "This account&#39;s stored data cannot be read" in page.text
        assert (await client.get("/console/accounts/A-1")).status_code == 200


async def test_a_batch_item_on_an_unreadable_account_fails_alone(database_url: str, unreadable_bank: Any) -> None:
    settings = _settings(BATCH_WORKER="1", BATCH_POLL_S="0.02")
    async with AsyncTestClient(app=create_app(settings, database_url)) as client:
        items = [ASK | {"account_ref": "B-1"}, ASK]
        r = await client.post("/v1/explanations:batch", json={"items": items}, headers=_auth(unreadable_bank.key))
        assert r.status_code == 202, r.text
        for _ in range(200):
            view = (await client.get(f"/v1/jobs/{r.json()['job_id']}", headers=_auth(unreadable_bank.key))).json()
            if view["status"] == "done":
                break
            await asyncio.sleep(0.05)
        assert (view["status"], view["done"], view["failed"]) == ("done", 1, 1)
        bad, good = view["items"]
        assert (bad["status"], bad["error"]) == ("error", f"unreadable_data: {UNREADABLE}")
        assert good["answer"]["totals"]["difference"] == "12.00"


# -- pooled connections the server closed -----------------------------------------------------------


async def _backend_pid(engine: AsyncEngine) -> int:
    async with autocommit(engine) as conn:
        return int((await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one())


async def test_a_pooled_connection_the_server_closed_is_replaced_not_handed_out(database_url: str) -> None:
    """A restart or pg_terminate_backend closes the pool's connections: the next checkout gets a new
    one, and the statement succeeds, instead of failing on the dead one."""
    engine = create_engine(database_url)
    try:
        killed = await _backend_pid(engine)
        await _admin(f"SELECT pg_terminate_backend({killed})")
        await asyncio.sleep(0.05)  # the server's goodbye reaches the pooled connection
        replaced = await _backend_pid(engine)
        assert replaced != killed
        assert await _backend_pid(engine) == replaced  # kept in the pool from then on
    finally:
        await engine.dispose()


async def test_a_connection_idle_in_the_pool_is_pinged_first(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Idle longer than IDLE_PING_S, it is pinged at checkout (a peer gone silently shows only so),
    and replaced when the ping fails; a connection back within IDLE_PING_S is handed out as it is."""
    engine = create_engine(database_url)
    pinged: list[int] = []

    def silent_peer(dbapi_connection: Any) -> None:
        pinged.append(dbapi_connection.driver_connection.get_server_pid())
        raise OSError("no answer")

    monkeypatch.setattr(database, "_ping", silent_peer)
    try:
        first = await _backend_pid(engine)
        assert await _backend_pid(engine) == first  # back a moment ago: handed out as it is
        assert pinged == []
        monkeypatch.setattr(database, "IDLE_PING_S", 0.0)
        await asyncio.sleep(0.01)
        replaced = await _backend_pid(engine)
        assert (pinged, replaced != first) == ([first], True)
    finally:
        await engine.dispose()


async def _driver_pid(pool: DriverPool) -> int:
    async with pool.connection() as conn:
        return int(await conn.fetchval("SELECT pg_backend_pid()"))


async def test_a_driver_statement_whose_connection_dies_is_503_and_the_connection_replaced(database_url: str) -> None:
    """The answer path's own statements (`DriverPool`): a connection killed under a running statement
    is DatabaseUnavailable, not a 500, and is not handed out again."""
    pool = DriverPool(database_url, size=2)
    killed: list[int] = []

    async def killed_midway() -> None:
        async with pool.connection() as conn:
            killed.append(conn.get_server_pid())
            running = asyncio.ensure_future(conn.fetchval("SELECT pg_sleep(5)"))
            await asyncio.sleep(0.1)
            await _admin(f"SELECT pg_terminate_backend({killed[0]})")
            await running

    try:
        with pytest.raises(DatabaseUnavailable):
            await killed_midway()
        async with pool.connection() as conn:
            assert conn.get_server_pid() != killed[0]
            assert await conn.fetchval("SELECT 1") == 1
    finally:
        await pool.close()


async def test_a_bad_driver_statement_is_still_an_error_of_its_own_and_its_connection_kept(database_url: str) -> None:
    pool = DriverPool(database_url, size=2)
    try:
        first = await _driver_pid(pool)
        with pytest.raises(asyncpg.exceptions.UndefinedTableError):
            async with pool.connection() as conn:
                await conn.fetchval("SELECT * FROM no_such_table")
        assert await _driver_pid(pool) == first
    finally:
        await pool.close()


async def test_the_driver_pool_replaces_a_connection_the_server_closed_and_pings_an_idle_one(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the main pool: a connection the server closed is replaced at checkout without a round
    trip; one idle longer than IDLE_PING_S is pinged, and replaced when the ping fails."""
    pool = DriverPool(database_url, size=2)
    pinged: list[int] = []

    async def silent_peer(conn: asyncpg.Connection) -> None:
        pinged.append(conn.get_server_pid())
        raise OSError("no answer")

    monkeypatch.setattr(driver_pool, "_ping", silent_peer)
    try:
        killed = await _driver_pid(pool)
        await _admin(f"SELECT pg_terminate_backend({killed})")
        await asyncio.sleep(0.05)  # the server's goodbye reaches the idle connection
        replaced = await _driver_pid(pool)
        assert replaced != killed
        assert (await _driver_pid(pool), pinged) == (replaced, [])  # back a moment ago: handed out as it is
        monkeypatch.setattr(driver_pool, "IDLE_PING_S", 0.0)
        await asyncio.sleep(0.01)
        assert (await _driver_pid(pool) != replaced, pinged) == (True, [replaced])
    finally:
        await pool.close()


async def test_the_driver_pool_waits_for_a_free_connection_then_gives_up_with_503(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(driver_pool, "POOL_TIMEOUT_S", 0.2)
    pool = DriverPool(database_url, size=1)
    try:
        async with pool.connection() as held:
            waiting = asyncio.ensure_future(_driver_pid(pool))
            await asyncio.sleep(0.05)
            assert not waiting.done()  # no second connection: it waits for this one
        assert await waiting == held.get_server_pid()
        async with pool.connection():
            with pytest.raises(DatabaseUnavailable):
                await _driver_pid(pool)
    finally:
        await pool.close()


async def test_the_driver_pool_closes_a_connection_whose_statement_was_interrupted(database_url: str) -> None:
    """A caller gone mid-statement (its task cancelled) leaves the connection in an unknown state:
    closed, not handed to the next answer."""
    pool = DriverPool(database_url, size=1)
    try:

        async def slow() -> None:
            async with pool.connection() as conn:
                await conn.fetchval("SELECT pg_sleep(5)")

        first = await _driver_pid(pool)
        task = asyncio.ensure_future(slow())
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await _driver_pid(pool) != first
    finally:
        await pool.close()


# -- every way the database can be out of reach, on the replicas' setup ----------------------------

READ_ONLY = {"status": 503, "error": "database_unavailable", "message": READ_ONLY_MESSAGE}
BREAKS = ("refused", "slow_connect", "too_many_clients", "not_accepting_connections", "read_only")


def _proxy_for(url: str) -> DatabaseProxy:
    parsed = make_url(url)
    socket_dir = parsed.query.get("host")
    if isinstance(socket_dir, str) and socket_dir.startswith("/"):  # the embedded Postgres
        return DatabaseProxy(f"{socket_dir}/.s.PGSQL.{parsed.port or 5432}")
    return DatabaseProxy((parsed.host or "127.0.0.1", parsed.port or 5432))


async def _break(outage: Outage, proxy: DatabaseProxy, how: str) -> None:
    if how == "refused":
        proxy.set("refuse")
    elif how == "slow_connect":
        proxy.set("hang")
    elif how == "too_many_clients":
        proxy.set("too_many")
    elif how == "not_accepting_connections":
        await outage.refuse_connections()
    else:  # a standby after a failover: reads answer, writes fail
        await _admin(f'ALTER DATABASE "{outage.name}" SET default_transaction_read_only = on')
        await outage.refuse_connections()
        await outage.accept_connections()


async def _mend(outage: Outage, proxy: DatabaseProxy) -> None:
    proxy.set("forward")
    await outage.accept_connections()
    await _admin(f'ALTER DATABASE "{outage.name}" RESET default_transaction_read_only')
    await outage.refuse_connections()  # the read-only sessions go: the pools reconnect
    await outage.accept_connections()


async def _every_route(client: Client, key: str, token: str, job_id: str) -> dict[str, httpx.Response]:
    return {
        **await _requests(client, key, token, job_id),
        "session": await client.post("/v1/sessions", json={"customer_ref": "C-1001"}, headers=_auth(key)),
        "accounts": await client.get("/v1/chat/accounts", headers=_auth(token)),
    }


UP = {
    "explanation": 200, "chat": 200, "job": 200, "batch": 202, "console": 200, "ready": 200, "session": 201,
    "accounts": 200,
}  # fmt: skip


@pytest.mark.parametrize("how", BREAKS)
async def test_every_way_the_database_can_be_out_of_reach_is_503_on_every_route_and_recovers(
    outage: Outage, fake_sglang: Any, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """As a replica of the default multi-worker server runs (shared admission, the SGLang engine):
    every route 503 `database_unavailable` with Retry-After, never a 500; a standby answers what only
    reads and refuses what writes, saying so; then everything answers again without a restart."""
    for module in (connecting, driver_pool, admission):  # a slow connect gives up in 0.5 s, not 5 s
        monkeypatch.setattr(module, "CONNECT_TIMEOUT_S", 0.5)
    proxy = _proxy_for(outage.url)
    url = make_url(outage.url).set(host="127.0.0.1", port=proxy.port, query={}).render_as_string(hide_password=False)
    env = {"ENGINE": "sglang", "SGLANG_URL": fake_sglang.url, "ADMISSION": "shared", "API_KEY_CACHE_TTL": "0"}
    try:
        async with AsyncTestClient(app=create_app(_settings(**env), url)) as client:
            token = await client.post("/v1/sessions", json={"customer_ref": "C-1001"}, headers=_auth(outage.key))
            job = await client.post("/v1/explanations:batch", json={"items": [ASK]}, headers=_auth(outage.key))
            assert (await sign_in(client, outage.slug)).status_code == 303
            args = (client, outage.key, token.json()["token"], job.json()["job_id"])
            assert {name: r.status_code for name, r in (await _every_route(*args)).items()} == UP

            await _break(outage, proxy, how)
            down = await _every_route(*args)
            if how == "read_only":
                writes = {"explanation", "chat", "batch"}  # each answer leaves an audit row
                assert {name: down[name].status_code for name in UP if name not in writes | {"ready"}} == {
                    name: UP[name] for name in UP if name not in writes | {"ready"}
                }
                assert down["ready"].json() == {
                    "status": "unavailable",
                    "database": "read_only",
                    "message": READ_ONLY_MESSAGE,
                }
            else:
                writes = {"explanation", "chat", "batch", "job", "session", "accounts"}
                assert down["ready"].json()["database"] == "unavailable"
            expected = READ_ONLY if how == "read_only" else DOWN
            for name in sorted(writes):
                assert (name, down[name].status_code, down[name].json()) == (name, 503, expected)
                assert down[name].headers["retry-after"] == "5", name
            assert (down["ready"].status_code, down["ready"].headers["retry-after"]) == (503, "5")
            if how != "read_only":
                assert (down["console"].status_code, down["console"].headers["retry-after"]) == (503, "5")

            await _mend(outage, proxy)
            assert {name: r.status_code for name, r in (await _every_route(*args)).items()} == UP
    finally:
        await _mend(outage, proxy)
        proxy.close()


async def test_the_admission_ledger_calls_a_database_closed_to_new_connections_unavailable(outage: Outage) -> None:
    """What the default multi-worker server answered 500 for: Postgres's `55000` from the ledger's pool."""
    ledger = admission.PostgresLedger(outage.url, pool_size=1)
    await ledger.open()
    try:
        await outage.refuse_connections()
        with pytest.raises(DatabaseUnavailable):
            await ledger.enter("bank", TenantLimits(), take_token=True, want_slot=True, slots=1, lease="l-1")
        await outage.accept_connections()
        assert await ledger.enter("bank", TenantLimits(), take_token=True, want_slot=True, slots=1, lease="l-2") == (
            "granted",
            0.0,
        )
        await ledger.leave("l-2")
    finally:
        await ledger.close()


async def test_the_default_multi_worker_server_answers_a_closed_database_with_503(
    outage: Outage, fake_sglang: Any
) -> None:
    """The reported case: `serve --workers 2` (shared admission), the database closed to new
    connections and its sessions ended; every answer 503 with Retry-After, every log line JSON."""
    engine = create_engine(outage.url)
    async with engine.begin() as conn:  # sixty answers in a few seconds: the rate limit is not the subject
        await set_limits(conn, outage.slug, {"rate_limit_per_s": 1e6, "max_concurrency": 1000})
    await engine.dispose()
    port = free_port()
    env = {"DATABASE_URL": outage.url, "ENGINE": "sglang", "SGLANG_URL": fake_sglang.url, "BATCH_WORKER": "0"}
    proc = start_service(port, "--workers", "2", **env, SESSION_SECRET="workers-secret")
    base = f"http://127.0.0.1:{port}"

    async def twenty() -> list[httpx.Response]:
        async def fresh() -> httpx.Response:  # a new connection each: the kernel spreads them over the workers
            async with httpx.AsyncClient(base_url=base, timeout=30) as http:
                return await http.post("/v1/explanations", json=ASK, headers=_auth(outage.key))

        return await asyncio.gather(*(fresh() for _ in range(20)))

    try:
        await wait_until_healthy(proc, base)
        first = await twenty()
        assert [r.status_code for r in first] == [200] * 20, [r.text for r in first if r.status_code != 200][:1]
        await outage.refuse_connections()
        down = await twenty()
        assert {(r.status_code, r.headers.get("retry-after"), r.json()["error"]) for r in down} == {
            (503, "5", "database_unavailable")
        }
        await outage.accept_connections()
        again = await twenty()
        assert [r.status_code for r in again] == [200] * 20, [r.text for r in again if r.status_code != 200][:1]
    finally:
        proc.terminate()
        output, _ = proc.communicate(timeout=60)
    # No record lost to the renderer: logging prints these when a handler fails on a record.
    assert ("--- Logging error ---" in output.decode(), "Unsupported type" in output.decode()) == (False, False)
    assert '"database unavailable"' in output.decode()  # each worker's 503s were logged
