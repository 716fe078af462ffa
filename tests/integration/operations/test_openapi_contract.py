"""The OpenAPI document tells the truth: schemathesis, with every check it has (`st run --checks
all`, in this process), generates requests from the live /schema for every operation and sends
them to the service under a real server: conformance of each answer to the document (status,
content type, body, headers), schema-valid requests accepted and invalid ones refused, no 5xx,
missing or wrong credentials refused, unsupported methods 405 with Allow, a submitted batch's job
readable through the link its 202 carries (stateful phase), and another bank's key refused the
objects this bank's key reads (`object_level_authorization`, with the two banks as peers). One
check of our own rides along: every response says `X-Content-Type-Options: nosniff`.

One check finds nothing to do, by the API's shape: `use_after_free` reads a resource back after its
DELETE, and the API deletes nothing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import schemathesis
from click.testing import CliRunner
from schemathesis.checks import CHECKS, CheckContext
from schemathesis.cli import schemathesis as st
from schemathesis.core.transport import Response
from schemathesis.generation.case import Case
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.app import create_app
from app.data.tenants import set_limits
from app.settings import Settings
from tests.factories import account, customer, document
from tests.postgres import new_database
from tests.servers import ThreadedServer

OPERATIONS = {
    "GET /health",
    "GET /ready",
    "GET /metrics",
    "POST /v1/explanations",
    "POST /v1/explanations:batch",
    "GET /v1/jobs/{job_id}",
    "POST /v1/sessions",
    "POST /v1/chat",
    "GET /v1/chat/accounts",
    "GET /v1/chat/conversations/{conversation_id}",
    "GET /v1/chat/words",
}
# A conversation's live feed stays open for as long as its page: no case of it would ever end.
# tests/integration/conversations/test_conversations.py reads it (its 404 for another customer, its messages).
LIVE_FEED = "/v1/chat/conversations/{conversation_id}/events"
# schemathesis's default; the run takes about 14 s on two cores.
MAX_EXAMPLES = 100


class Live(msgspec.Struct, kw_only=True):
    url: str
    key: str
    other_key: str  # another bank's, which must reach none of this bank's objects
    token: str
    job_id: str
    conversation_id: str


@pytest.fixture(scope="module")
def database_url() -> Iterator[str]:
    """A database of its own: the run leaves hundreds of batch jobs queued (its service has no batch
    worker), and every later service's worker, one queue for all banks, would answer them first."""
    with new_database() as url:
        yield url


@pytest.fixture
async def live(database_url: str, engine: AsyncEngine, make_tenant: Any, load: Any) -> AsyncIterator[Live]:
    tenant, other = await make_tenant("interactive"), await make_tenant("interactive")
    async with engine.begin() as conn:  # hundreds of questions a second: answered, not 429
        await set_limits(conn, tenant.slug, {"rate_limit_per_s": 100_000})
    await load(document(tenant.slug, [customer(accounts=[account("A-1"), account("A-2")])]))
    env = {"ENGINE": "off", "API_KEY_CACHE_TTL": "0", "BATCH_WORKER": "0", "SESSION_SECRET": "contract-secret"}
    env["LOG_LEVEL"] = "WARNING"  # the request log would go into schemathesis's report (one stdout)
    server = ThreadedServer(create_app(Settings.from_env(env), database_url))
    try:
        async with httpx.AsyncClient(base_url=server.url, headers={"Authorization": f"Bearer {tenant.key}"}) as client:
            session = await client.post("/v1/sessions", json={"customer_ref": "C-1001"})
            assert session.status_code == 201, session.text
            job = await client.post("/v1/explanations:batch", json={"items": [{"account_ref": "A-1"}]})
            assert job.status_code == 202, job.text
        token, job_id = session.json()["token"], job.json()["job_id"]
        async with httpx.AsyncClient(base_url=server.url, headers={"Authorization": f"Bearer {token}"}) as client:
            chat = await client.post("/v1/chat", json={"account_ref": "A-1", "question": "Why is my bill higher?"})
            assert chat.status_code == 200, chat.text
        conversation_id = json.loads(chat.text.split("data: ", 1)[1].split("\n", 1)[0])["conversation_id"]
        yield Live(
            url=server.url,
            key=tenant.key,
            other_key=other.key,
            token=token,
            job_id=job_id,
            conversation_id=conversation_id,
        )
    finally:
        server.stop()


def nosniff(ctx: CheckContext, response: Response, case: Case[Any]) -> bool | None:
    """Every response, a stream or an error as much as JSON, is read as the type it says it is."""
    sent = response.headers.get("x-content-type-options")
    assert sent == ["nosniff"], f"{response.status_code} with X-Content-Type-Options {sent}, not nosniff"
    return None


@pytest.fixture
def our_check() -> Iterator[None]:
    schemathesis.check(nosniff)  # a registered check is one of "all"
    try:
        yield
    finally:
        CHECKS.unregister(nosniff.__name__)


def _banks(live: Live, path: Path) -> Path:
    """The two banks' keys as a Web Fuzzing Commons auth document."""
    banks = {"bank": live.key, "other-bank": live.other_key}
    users = [
        {"name": name, "fixedHeaders": [{"name": "Authorization", "value": f"Bearer {key}"}]}
        for name, key in banks.items()
    ]
    path.write_text(json.dumps({"auth": users}))
    return path


def _config(live: Live, cache: Path, report: Path, banks: Path) -> str:
    """schemathesis.toml: the bank's key for every operation but the chat's, which take the
    customer's token (the other bank's key only for the probes of `object_level_authorization`);
    real refs and the job made above for part of the generated values, so that positive cases reach
    the answers and the job, not only 404s; any warning (say, an operation that only ever answered
    404) fails the run."""
    q = json.dumps  # a TOML basic string, for these values

    def binding(dictionary: str) -> str:
        return f'{{ dictionary = "{dictionary}", probability = 0.5 }}'

    return f"""
# The key every request carries; and the identities object_level_authorization compares.
headers = {{ Authorization = {q("Bearer " + live.key)} }}
auth.wfc = {{ path = {q(str(banks))}, user = "bank", peers = ["bank", "other-bank"] }}
seed = 1
# One worker: Hypothesis names its filters by parsing their source with `ast`, which CPython 3.11 cannot do
# from two threads at once ("SystemError: AST constructor recursion depth mismatch", 2 runs in 4 here).
workers = 1
warnings = {{ fail-on = true }}
cache = {{ directory = {q(str(cache))} }}
reports.json = {{ path = {q(str(report))} }}
generation = {{ max-examples = {MAX_EXAMPLES}, database = "none" }}

dictionaries.accounts = {{ values = ["A-1", "A-2"] }}
dictionaries.customers = {{ values = ["C-1001"] }}
dictionaries.jobs = {{ values = [{q(live.job_id)}] }}
dictionaries.conversations = {{ values = [{q(live.conversation_id)}] }}

[parameters]
"body.account_ref" = {binding("accounts")}
"body.items[*].account_ref" = {binding("accounts")}
"body.customer_ref" = {binding("customers")}
"path.job_id" = {binding("jobs")}
"path.conversation_id" = {binding("conversations")}

[[operations]]
include-path-regex = "^/v1/chat"
headers = {{ Authorization = {q("Bearer " + live.token)} }}

[[operations]]
include-path = {q(LIVE_FEED)}
enabled = false
"""


def test_schemathesis_with_every_check_finds_nothing(live: Live, our_check: None, tmp_path: Path) -> None:
    config, report = tmp_path / "schemathesis.toml", tmp_path / "report.json"
    config.write_text(_config(live, tmp_path / "cache", report, _banks(live, tmp_path / "banks.json")))
    args = ["--config-file", str(config), "run", f"{live.url}/schema/openapi.json", "--checks", "all"]
    result = CliRunner().invoke(st, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    run = json.loads(report.read_text())
    assert (run["failures"], run["errors"]) == ([], []), result.output
    # It ran what it says: every operation, every phase (no examples in the document: nothing to
    # replay), the stateful one through the 202's link; and each operation accepted some of its
    # schema-valid requests with a 2xx (a real account, customer, job), not only 404s.
    assert run["operations"]["tested"] == len(OPERATIONS)
    assert set(run["valid_rates"]) == OPERATIONS
    assert {name: phase["status"] for name, phase in run["phases"].items()} == {
        "examples": "skip",
        "coverage": "success",
        "fuzzing": "success",
        "stateful": "success",
    }
    # The batch's link to its job, followed; the one schemathesis infers to the live feed is not (disabled).
    assert "API Links:    1 covered / 2 selected / 2 total (1 inferred)" in result.output, result.output
    accepted = {name: rates["fuzzing"]["accepted"] for name, rates in run["valid_rates"].items()}
    assert all(accepted.values()), accepted
