"""The agent console over HTTP against a real Postgres: sign-in and its cookie, CSRF on every form,
tenant isolation, asking through the pipeline, the audited answer with its latency waterfall."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from datetime import date
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from litestar.testing import AsyncTestClient
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.app import create_app
from app.api.console.views import statement_view
from app.api.waterfall import STAGES
from app.cli import main
from app.cli.demo import DEMO_AGENT, demo_agents
from app.data.agents import Identity, authenticate, disable_agent
from app.data.database import autocommit, create_engine
from app.data.history import load_history
from app.data.signin import account_key
from app.data.tenants import create_tenant, set_limits
from app.demo import TENANTS
from app.domain.facts import compute_facts
from app.security import hash_password, verify_password
from bench.fakes.plans import GOOD, GOOD_SHOWN
from bench.fakes.sglang_server import RunningFake, Script
from tests.console import PASSWORD, console_settings, csrf_of, sign_in, signed_in
from tests.factories import account, customer, document
from tests.waiting import until

QUESTION = "Why is my bill higher than last month?"
SHOWN = GOOD_SHOWN  # what the customer (and the agent) reads for the plan GOOD
Client = AsyncTestClient[Any]
BO = customer("C-2002", accounts=[account("B-1")]) | {"name": "Bo Chen"}
pytestmark = pytest.mark.bank(customer() | {"name": "Ann Lee"}, BO, agents=("ana",), priority_class="standard")


@pytest.fixture
async def other_bank(make_bank: Any) -> Any:
    return await make_bank(customer() | {"name": "Zed Other"}, BO, agents=("ana",), priority_class="standard")


@pytest.fixture
async def console(database_url: str) -> AsyncIterator[Client]:
    async with AsyncTestClient(app=create_app(console_settings(), database_url)) as client:
        yield client


@pytest.fixture
async def model_console(database_url: str, fake_sglang: RunningFake) -> AsyncIterator[Client]:
    fake_sglang.fake.default = Script(text=GOOD)
    settings = console_settings(ENGINE="sglang", SGLANG_URL=fake_sglang.url, SGLANG_MODEL="fake/model")
    async with AsyncTestClient(app=create_app(settings, database_url)) as client:
        yield client


@contextmanager
def other_cookies(client: Client) -> Iterator[None]:
    """Another browser on the same app: its own cookie jar for a while."""
    saved = httpx.Cookies(client.cookies)
    client.cookies.clear()
    try:
        yield
    finally:
        client.cookies = saved


async def ask(client: Client, csrf: str, question: str = QUESTION, ref: str = "A-1", **extra: str) -> httpx.Response:
    data = {"csrf_token": csrf, "question": question, "locale": "en", **extra}
    return await client.post(f"/console/accounts/{ref}/answers", data=data, follow_redirects=False)


async def audit_row(engine: AsyncEngine, answer_id: str) -> Any:
    async with autocommit(engine) as conn:
        result = await conn.execute(text("SELECT * FROM answers WHERE id = :id"), {"id": uuid.UUID(answer_id)})
        return result.mappings().one()


def answer_id_of(response: httpx.Response) -> str:
    assert response.status_code == 303, response.text
    location = response.headers["location"]
    assert location.startswith("/console/answers/")
    return location.rsplit("/", 1)[1]


def stage_rows(page: httpx.Response) -> list[str]:
    return re.findall(r'<tr data-stage="([a-z]+)">', page.text)


def test_passwords_are_salted_scrypt_hashes_checked_in_constant_time() -> None:
    first, second = hash_password(PASSWORD), hash_password(PASSWORD)
    assert first != second  # a random salt each time
    assert first.startswith("scrypt$16384$8$5$")
    assert PASSWORD not in first
    assert verify_password(PASSWORD, first)
    assert verify_password(PASSWORD, second)
    assert not verify_password(PASSWORD + "!", first)
    assert not verify_password(PASSWORD, "not a hash")
    assert not verify_password(PASSWORD, first.replace("scrypt$", "bcrypt$"))


async def test_signing_in_sets_a_session_cookie_with_safe_flags(
    console: Client, bank: Any, engine: AsyncEngine, database_url: str
) -> None:
    response = await sign_in(console, bank.slug)
    assert response.status_code == 303
    assert response.headers["location"] == "/console"
    cookie = next(c for c in response.headers.get_list("set-cookie") if c.startswith("console_session="))
    flags = {part.strip().split("=")[0].lower(): part.strip() for part in cookie.split(";")[1:]}
    assert flags["path"] == "Path=/console"
    assert flags["max-age"] == "Max-Age=28800"
    assert "httponly" in flags
    assert flags["samesite"].lower() == "samesite=lax"
    assert "secure" not in flags  # COOKIE_SECURE=0: plain HTTP in tests
    token = cookie.split(";")[0].split("=", 1)[1]
    async with autocommit(engine) as conn:  # only the token's digest is stored
        hashes = (await conn.execute(text("SELECT token_hash FROM agent_sessions"))).scalars().all()
    assert hashlib.sha256(token.encode()).hexdigest() in hashes
    assert token not in hashes
    page = await console.get("/console")
    assert page.status_code == 200
    assert "Ana Agent" in page.text
    assert page.headers["cache-control"] == "no-store"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]

    app = create_app(console_settings(COOKIE_SECURE="1"), database_url)
    async with AsyncTestClient(app=app, base_url="https://testserver.local") as secure:
        response = await sign_in(secure, bank.slug)
    assert response.status_code == 303
    assert "; Secure" in next(c for c in response.headers.get_list("set-cookie") if c.startswith("console_session="))


async def test_a_wrong_password_an_unknown_user_and_a_disabled_agent_all_get_the_same_401(
    console: Client, bank: Any, engine: AsyncEngine
) -> None:
    wrong = await sign_in(console, bank.slug, password="not the password")
    unknown = await sign_in(console, bank.slug, username="nobody")
    async with engine.begin() as conn:
        assert await disable_agent(conn, bank.id, "ana")
    disabled = await sign_in(console, bank.slug)
    for response, typed in ((wrong, "ana"), (unknown, "nobody"), (disabled, "ana")):
        assert response.status_code == 401
        assert "Sign-in failed: the bank, username and password do not match an active agent." in response.text
        assert not any(c.startswith("console_session=") for c in response.headers.get_list("set-cookie"))
        assert f'value="{typed}"' in response.text  # the form keeps what was typed
    assert (await console.get("/console", follow_redirects=False)).status_code == 303


async def test_repeated_wrong_passwords_hold_the_agent_back_for_a_while(
    console: Client, bank: Any, engine: AsyncEngine
) -> None:
    for _ in range(5):  # SIGNIN_MAX_FAILURES
        assert (await sign_in(console, bank.slug, password="guess-guess-guess")).status_code == 401
    held = await sign_in(console, bank.slug)  # the right password, too soon: the same answer as a wrong one
    assert held.status_code == 401
    assert "Sign-in failed: the bank, username and password do not match an active agent." in held.text
    key = account_key(bank.slug, "ana")
    async with engine.begin() as conn:
        row = await conn.execute(text("SELECT failures, until - updated_at FROM signin_throttle WHERE key = :k"),
                                 {"k": key})  # fmt: skip
        failures, window = row.one()
        assert (failures, window.total_seconds()) == (5, 60.0)  # SIGNIN_BACKOFF_S
        # The window lapses (here: moved into the past) and the right password works again.
        await conn.execute(text("UPDATE signin_throttle SET until = now() - interval '1 s' WHERE key = :k"),
                           {"k": key})  # fmt: skip
    assert (await sign_in(console, bank.slug)).status_code == 303
    # A success clears the count: the next wrong password does not hold the agent back at once.
    with other_cookies(console):
        assert (await sign_in(console, bank.slug, password="guess-guess-guess")).status_code == 401
        assert (await sign_in(console, bank.slug)).status_code == 303


async def test_disabling_an_agent_ends_its_sessions(console: Client, bank: Any, engine: AsyncEngine) -> None:
    await signed_in(console, bank.slug)
    sessions = "SELECT count(*) FROM agent_sessions s JOIN agents a ON a.id = s.agent_id WHERE a.tenant_id = :t"
    async with engine.begin() as conn:  # disabled behind the console's back: its session is refused at once
        await conn.execute(text("UPDATE agents SET disabled_at = now() WHERE tenant_id = :t"), {"t": bank.id})
    response = await console.get("/console", follow_redirects=False)
    assert (response.status_code, response.headers["location"]) == (303, "/console/login")
    async with engine.begin() as conn:  # disabling it properly also deletes its sessions
        assert (await conn.execute(text(sessions), {"t": bank.id})).scalar_one() == 1
        assert await disable_agent(conn, bank.id, "ana")
        assert (await conn.execute(text(sessions), {"t": bank.id})).scalar_one() == 0
        assert not await disable_agent(conn, bank.id, "nobody")


@pytest.mark.parametrize("token", [None, "forged-token"])
async def test_the_sign_in_form_needs_its_csrf_token(console: Client, bank: Any, token: str | None) -> None:
    await console.get("/console/login")  # the cookie half of the pair is set
    data = {"tenant": bank.slug, "username": "ana", "password": PASSWORD}
    response = await console.post("/console/login", data=data | ({"csrf_token": token} if token else {}))
    assert response.status_code == 403
    assert "security token is missing or does not match" in response.text
    assert not any(c.startswith("console_session=") for c in response.headers.get_list("set-cookie"))
    # Without the cookie, even the form's own token is refused (a double submit needs both halves).
    form = await console.get("/console/login")
    console.cookies.delete("console_login_csrf")
    response = await console.post("/console/login", data=data | {"csrf_token": csrf_of(form)})
    assert response.status_code == 403


@pytest.mark.parametrize("token", [None, "forged-token"])
async def test_asking_and_signing_out_need_the_sessions_csrf_token(
    console: Client, bank: Any, engine: AsyncEngine, token: str | None
) -> None:
    csrf = await signed_in(console, bank.slug)
    extra = {"csrf_token": token} if token else {}
    for path in ("/console/accounts/A-1/answers", "/console/accounts/A-1/answers/stream"):
        refused = await console.post(path, data={"question": QUESTION, **extra})
        assert refused.status_code == 403
        assert "security token is missing or does not match your session" in refused.text
    async with autocommit(engine) as conn:
        count = "SELECT count(*) FROM answers WHERE tenant_id = :t"
        assert (await conn.execute(text(count), {"t": bank.id})).scalar_one() == 0  # nothing was asked
    refused = await console.post("/console/logout", data=extra)
    assert refused.status_code == 403
    assert (await console.get("/console")).status_code == 200  # still signed in
    # Another session's token is as wrong as a forged one.
    with other_cookies(console):
        other_csrf = await signed_in(console, bank.slug)
    assert other_csrf != csrf
    assert (await ask(console, other_csrf)).status_code == 403


async def test_signing_out_ends_the_session(console: Client, bank: Any) -> None:
    csrf = await signed_in(console, bank.slug)
    token = console.cookies["console_session"]
    response = await console.post("/console/logout", data={"csrf_token": csrf}, follow_redirects=False)
    assert (response.status_code, response.headers["location"]) == (303, "/console/login")
    assert any(c.startswith("console_session=") and "Max-Age=0" in c for c in response.headers.get_list("set-cookie"))
    console.cookies.set("console_session", token, path="/console")  # the old token, replayed
    assert (await console.get("/console", follow_redirects=False)).status_code == 303


async def test_without_a_session_every_page_redirects_to_sign_in(console: Client, bank: Any) -> None:
    for path in ("/console", "/console?q=ann", "/console/accounts/A-1", f"/console/answers/{uuid.uuid4()}"):
        response = await console.get(path, follow_redirects=False)
        assert (response.status_code, response.headers["location"]) == (303, "/console/login"), path
    response = await ask(console, "whatever")
    assert (response.status_code, response.headers["location"]) == (303, "/console/login")
    console.cookies.set("console_session", "made-up", path="/console")
    assert (await console.get("/console", follow_redirects=False)).status_code == 303
    login = await console.get("/console/login")
    assert login.status_code == 200
    assert '<html lang="en">' in login.text
    for field in ("tenant", "username", "password"):
        assert f'<label for="{field}">' in login.text
        assert f'id="{field}"' in login.text


async def test_an_expired_session_is_refused(console: Client, bank: Any, engine: AsyncEngine) -> None:
    await signed_in(console, bank.slug)
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "UPDATE agent_sessions SET expires_at = now() - interval '1 second'"
                " WHERE agent_id IN (SELECT id FROM agents WHERE tenant_id = :t)"
            ),
            {"t": bank.id},
        )
    response = await console.get("/console", follow_redirects=False)
    assert (response.status_code, response.headers["location"]) == (303, "/console/login")


async def test_search_finds_customers_by_reference_or_name_within_the_tenant(
    console: Client, bank: Any, other_bank: Any
) -> None:
    await signed_in(console, bank.slug)
    by_name = await console.get("/console", params={"q": "aNN"})
    assert "Ann Lee" in by_name.text
    assert 'href="/console/accounts/A-1"' in by_name.text
    assert "Bo Chen" not in by_name.text
    by_ref = await console.get("/console", params={"q": "c-2002"})
    assert "Bo Chen" in by_ref.text
    assert 'href="/console/accounts/B-1"' in by_ref.text
    # The other bank's customer, found by its own agent, never by this one.
    assert "Zed Other" not in (await console.get("/console", params={"q": "Zed"})).text
    assert "No customer’s reference or name contains" in (await console.get("/console", params={"q": "%"})).text


async def test_another_tenants_answer_is_not_found(console: Client, bank: Any, other_bank: Any) -> None:
    with other_cookies(console):
        their_csrf = await signed_in(console, other_bank.slug)
        their_answer = answer_id_of(await ask(console, their_csrf))
        assert (await console.get(f"/console/answers/{their_answer}")).status_code == 200
    await signed_in(console, bank.slug)
    missing = str(uuid.uuid4())
    theirs, unknown = (
        await console.get(f"/console/answers/{their_answer}"),
        await console.get(f"/console/answers/{missing}"),
    )
    assert theirs.status_code == unknown.status_code == 404
    assert theirs.text.replace(their_answer, "ID") == unknown.text.replace(missing, "ID")
    assert (await console.get("/console/answers/not-a-uuid")).status_code == 404


async def test_another_tenants_account_is_not_found(console: Client, bank: Any, make_tenant: Any, load: Any) -> None:
    other = await make_tenant()
    await load(document(other.slug, [customer("C-9", accounts=[account("THEIRS-1")])]))
    csrf = await signed_in(console, bank.slug)
    theirs, missing = await console.get("/console/accounts/THEIRS-1"), await console.get("/console/accounts/NONE-1")
    assert theirs.status_code == missing.status_code == 404
    assert theirs.text.replace("THEIRS-1", "X") == missing.text.replace("NONE-1", "X")
    assert (await ask(console, csrf, ref="THEIRS-1")).status_code == 404


async def test_the_account_page_shows_the_statement_comparison(console: Client, bank: Any, engine: AsyncEngine) -> None:
    await signed_in(console, bank.slug)
    page = await console.get("/console/accounts/A-1")
    assert page.status_code == 200
    async with autocommit(engine) as conn:
        history = await load_history(conn, bank.id, "A-1", None, date.today())
    assert history is not None
    view = statement_view(compute_facts(history, date.today()))
    assert view.previous_balance == "112.99 EUR"
    assert view.new_balance == "124.99 EUR"
    assert view.difference == "+12.00 EUR"
    for value in (view.previous_balance, view.new_balance, view.difference, view.minimum_due, view.due_date,
                  view.payment_status, view.outstanding):  # fmt: skip
        assert value in page.text
    for line in view.drivers:
        assert f'<th scope="row">{line.label}</th><td>{line.amount}</td>' in page.text
    assert '<option value="en" selected>' in page.text  # the customer's language by default
    assert '<label for="question">' in page.text


async def test_asking_audits_a_console_answer_and_shows_its_validation_and_waterfall(
    console: Client, bank: Any, engine: AsyncEngine
) -> None:
    csrf = await signed_in(console, bank.slug)
    answer_id = answer_id_of(await ask(console, csrf, question="Why is my bill\r\nhigher than last month?"))
    row = await audit_row(engine, answer_id)
    assert (row["channel"], row["source"], row["fallback_reason"]) == ("console", "fallback", "engine_off")
    assert row["question"] == "Why is my bill\nhigher than last month?"
    page = await console.get(f"/console/answers/{answer_id}")
    assert page.status_code == 200
    assert '<dd id="source">fallback</dd>' in page.text
    assert "Deterministic answer served: no model is configured" in page.text
    assert '<dd id="cached-share">—</dd>' in page.text
    assert row["answer"]["explanation"] in page.text.replace("&#39;", "'")
    recorded = [s for s in STAGES if s in row["stage_starts"] and s in row["timings"]]
    assert {"auth", "admission", "db", "facts", "explain"} <= set(recorded)
    assert stage_rows(page) == recorded  # one row per recorded stage, in pipeline order
    assert page.text.count('<rect class="bar') == len(recorded)
    account_page = await console.get("/console/accounts/A-1")
    assert f'href="/console/answers/{answer_id}"' in account_page.text


async def test_a_model_answer_shows_engine_stages_and_regenerating_skips_the_cache(
    model_console: Client, bank: Any, engine: AsyncEngine, fake_sglang: RunningFake
) -> None:
    csrf = await signed_in(model_console, bank.slug)
    first = answer_id_of(await ask(model_console, csrf))
    row = await audit_row(engine, first)
    assert (row["channel"], row["source"], row["fallback_reason"]) == ("console", "model", None)
    page = await model_console.get(f"/console/answers/{first}")
    assert '<dd id="source">model</dd>' in page.text
    passed = "Passed: every claim of the model's plan held against the facts, said in reviewed wordings"
    assert passed in page.text.replace("&#39;", "'")
    assert SHOWN in page.text
    usage = row["usage"]
    share = f"{usage['cached_tokens'] / usage['prompt_tokens']:.0%}"
    assert f'<dd id="cached-share">{share} ({usage["cached_tokens"]} of {usage["prompt_tokens"]}' in page.text
    rows = stage_rows(page)
    assert {"engine", "queue", "ttft", "decode", "validate", "prompt"} <= set(rows)
    assert rows == [s for s in STAGES if s in rows]

    # The miss queued the canonical answer (the app runs in the client's thread).
    await until("the canonical answer's fill", lambda: model_console.app.state.answers.filling == 0)
    assert len(fake_sglang.fake.requests) == 2  # the agent's question, then the canonical one
    again = answer_id_of(await ask(model_console, csrf))  # the same question: the cache answers
    assert again != first
    assert (await audit_row(engine, again))["source"] == "cache"
    page = await model_console.get(f"/console/answers/{again}")
    assert '<dd id="source">cache</dd>' in page.text
    # The row is written by the statement that finds the hit, once the facts are worked out.
    assert stage_rows(page) == ["auth", "admission", "db", "facts", "library"]
    assert len(fake_sglang.fake.requests) == 2

    regenerated = answer_id_of(await ask(model_console, csrf, regenerate="1"))
    assert (await audit_row(engine, regenerated))["source"] == "model"
    assert len(fake_sglang.fake.requests) == 3
    assert 'name="regenerate" value="1"' in (await model_console.get(f"/console/answers/{regenerated}")).text


async def test_the_page_streams_the_answer_then_links_to_its_audit_row(
    model_console: Client, bank: Any, engine: AsyncEngine
) -> None:
    csrf = await signed_in(model_console, bank.slug)
    data = {"csrf_token": csrf, "question": QUESTION, "locale": "en"}
    r = await model_console.post("/console/accounts/A-1/answers/stream", data=data)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    events = [
        (block.split("\n")[0].removeprefix("event: "), json.loads(block.split("\n")[1].removeprefix("data: ")))
        for block in r.text.replace("\r\n", "\n").strip().split("\n\n")
    ]
    names = [name for name, _ in events]
    assert names[0] == "facts"
    assert names[-2:] == ["final", "answer_page"]
    assert "".join(data["text"] for name, data in events if name == "delta") == SHOWN
    page = events[-1][1]["url"]
    row = await audit_row(engine, page.rsplit("/", 1)[1])
    assert (row["channel"], row["source"], row["answer"]["explanation"]) == ("console", "model", SHOWN)
    assert "ttft" in row["stage_starts"]
    assert "time to first token" in (await model_console.get(page)).text
    # A bad question is a 400 before any stream.
    r = await model_console.post("/console/accounts/A-1/answers/stream", data=data | {"question": " "})
    assert r.status_code == 400


async def test_a_bad_question_is_refused_on_the_account_page(console: Client, bank: Any) -> None:
    csrf = await signed_in(console, bank.slug)
    response = await ask(console, csrf, question="x" * 1001)
    assert response.status_code == 400
    assert "The question was not asked" in response.text
    assert "x" * 1001 in response.text  # kept, to be shortened
    assert (await ask(console, csrf, question="   ")).status_code == 400


async def test_shedding_is_a_clear_page_with_retry_after(console: Client, bank: Any, engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await set_limits(conn, bank.slug, {"rate_limit_per_s": 0.01})
    csrf = await signed_in(console, bank.slug)
    assert (await ask(console, csrf)).status_code == 303
    shed = await ask(console, csrf)
    assert shed.status_code == 429
    assert int(shed.headers["retry-after"]) >= 1
    assert "The question was not answered" in shed.text
    assert "text/html" in shed.headers["content-type"]


@pytest.fixture
def cli(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    monkeypatch.setenv("DATABASE_URL", database_url)
    runner = CliRunner()
    return lambda *args, input=None: runner.invoke(main, list(args), input=input, catch_exceptions=False)


def _authenticate(url: str, slug: str, username: str, password: str) -> Identity | None:
    async def run() -> Identity | None:
        engine = create_engine(url)
        try:
            async with autocommit(engine) as conn:
                return await authenticate(conn, slug, username, password)
        finally:
            await engine.dispose()

    return asyncio.run(run())


def test_agents_are_created_and_disabled_from_the_command_line(cli: Any, database_url: str) -> None:
    slug = f"cli-{uuid.uuid4().hex[:8]}"
    assert cli("tenants", "create", slug, "--name", "CLI Bank").exit_code == 0
    created = cli("agents", "create", "--tenant", slug, "--username", "bo", "--name", "Bo", "--password-stdin",
                  input=PASSWORD + "\n")  # fmt: skip
    assert created.exit_code == 0, created.output
    prompted = cli("agents", "create", "--tenant", slug, "--username", "cy", input=f"{PASSWORD}\n{PASSWORD}\n")
    assert prompted.exit_code == 0, prompted.output
    assert PASSWORD not in prompted.output  # the prompt is hidden
    bo = _authenticate(database_url, slug, "bo", PASSWORD)
    assert bo is not None
    assert bo.display_name == "Bo"
    assert _authenticate(database_url, slug, "cy", PASSWORD) is not None
    taken = cli("agents", "create", "--tenant", slug, "--username", "bo", "--password-stdin", input=PASSWORD)
    assert (taken.exit_code, "already exists" in taken.output) == (1, True)
    short = cli("agents", "create", "--tenant", slug, "--username", "dee", "--password-stdin", input="short\n")
    assert (short.exit_code, "at least 12 characters" in short.output) == (1, True)
    nowhere = cli("agents", "create", "--tenant", "no-such-bank", "--username", "x", "--password-stdin", input=PASSWORD)
    assert (nowhere.exit_code, "unknown tenant" in nowhere.output) == (1, True)
    assert cli("agents", "disable", "--tenant", slug, "--username", "bo").exit_code == 0
    assert _authenticate(database_url, slug, "bo", PASSWORD) is None
    assert cli("agents", "disable", "--tenant", slug, "--username", "nobody").exit_code == 1


async def test_the_demo_agents_get_a_new_password_each_run(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        transaction = await conn.begin()  # rolled back: the demo tenants' slugs stay free for others
        for tenant in TENANTS:
            await create_tenant(conn, tenant.slug, tenant.name, tenant.priority_class)
        first = await demo_agents(conn)
        second = await demo_agents(conn)
        assert set(first) == {t.slug for t in TENANTS}
        for slug in first:
            assert first[slug] != second[slug]
            assert await authenticate(conn, slug, DEMO_AGENT, first[slug]) is None
            assert await authenticate(conn, slug, DEMO_AGENT, second[slug]) is not None
        await transaction.rollback()


async def test_the_answer_page_shows_the_questions_language_and_the_customers(console: Client, bank: Any) -> None:
    csrf = await signed_in(console, bank.slug)  # Ann's locale is English; she writes in Chinese
    page = await console.get(
        f"/console/answers/{answer_id_of(await ask(console, csrf, '为什么这个月的账单比上个月高？'))}"
    )
    language = re.search(r'<dd id="language">([^<]+)</dd>', page.text)
    assert language is not None
    assert language.group(1) == "answered in 简体中文 (Simplified Chinese); the customer’s is English"
