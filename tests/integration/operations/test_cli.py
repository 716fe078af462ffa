"""The bill-assistant command against the test database."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import msgspec
from litestar.testing import TestClient

from app.api.app import create_app
from app.data.database import create_engine
from app.data.tenants import authenticate
from app.domain.policy import TenantPolicy
from app.prompts import PROMPT_VERSION, answer_version
from app.settings import Settings
from tests.factories import document


def _authenticate(url: str, key: str) -> Any:
    async def run() -> Any:
        engine = create_engine(url)
        async with engine.connect() as conn:
            principal = await authenticate(conn, key)
        await engine.dispose()
        return principal

    return asyncio.run(run())


def test_tenant_import_and_reimport(cli: Any, database_url: str, tmp_path: Path) -> None:
    assert cli("migrate").exit_code == 0

    created = cli("tenants", "create", "cli-bank", "--name", "CLI Bank", "--priority-class", "interactive")
    assert created.exit_code == 0, created.output
    key = created.output.strip().splitlines()[-1]
    principal = _authenticate(database_url, key)
    assert (principal.tenant_slug, principal.priority_class) == ("cli-bank", "interactive")

    again = cli("tenants", "create", "cli-bank", "--name", "CLI Bank")
    assert again.exit_code == 1
    assert "already exists" in again.output

    file = tmp_path / "bank.json"
    file.write_text(json.dumps(document("cli-bank")))
    first = cli("import", str(file))
    assert first.exit_code == 0, first.output
    assert "transactions: 6 created, 0 updated, 0 unchanged" in first.output
    second = cli("import", str(file))
    assert "customers: 0 created, 0 updated, 1 unchanged" in second.output
    assert "transactions: 0 created, 0 updated, 6 unchanged" in second.output

    bad = document("cli-bank")
    bad["customers"][0]["accounts"][0]["transactions"][3]["amount"] = "ten"
    file.write_text(json.dumps(bad))
    rejected = cli("import", str(file))
    assert rejected.exit_code == 1
    assert "nothing was imported" in rejected.output
    assert "$.customers[0].accounts[0].transactions[3].amount" in rejected.output


def test_issue_key_for_an_unknown_tenant_fails(cli: Any) -> None:
    result = cli("tenants", "issue-key", "nobody")
    assert result.exit_code == 1
    assert "unknown tenant" in result.output


def test_tenant_policy_is_shown_and_changed(cli: Any) -> None:
    assert cli("tenants", "create", "policy-bank", "--name", "Policy Bank").exit_code == 0
    shown = cli("tenants", "policy", "policy-bank")
    assert json.loads(shown.output)["brand"] == "Policy Bank"
    changed = cli("tenants", "policy", "policy-bank", "--tone", "formal", "--forbid", "discuss other banks")
    policy = json.loads(changed.output)
    assert (policy["brand"], policy["tone"], policy["forbidden"]) == ("Policy Bank", "formal", ["discuss other banks"])
    assert json.loads(cli("tenants", "policy", "policy-bank").output)["tone"] == "formal"
    assert cli("tenants", "policy", "nobody").exit_code == 1


def test_a_tenant_answer_policy_is_stored_checked_and_versioned(cli: Any) -> None:
    assert cli("tenants", "create", "answers-bank", "--name", "Answers Bank").exit_code == 0
    before = answer_version(msgspec.convert({"brand": "Answers Bank"}, TenantPolicy))
    rule = "payment:unpaid=payment_status,minimum_due,next_step"
    changed = json.loads(cli("tenants", "policy", "answers-bank", "--answer", rule).output)
    assert changed["answers"] == {"payment:unpaid": ["payment_status", "minimum_due", "next_step"]}
    after = answer_version(msgspec.convert(changed, TenantPolicy))
    assert before == PROMPT_VERSION
    assert after != before  # a new prompt version: the cache key and every answer's audit row say which
    refused = cli("tenants", "policy", "answers-bank", "--answer", "payment:unpaid=refund")
    assert refused.exit_code == 1
    assert "unknown claim 'refund'" in refused.output
    assert json.loads(cli("tenants", "policy", "answers-bank").output)["answers"] == changed["answers"]
    cleared = json.loads(cli("tenants", "policy", "answers-bank", "--answer", "payment:unpaid=").output)
    assert cleared["answers"] == {}


def test_tenant_limits_are_shown_and_changed(cli: Any) -> None:
    assert cli("tenants", "create", "limits-bank", "--name", "Limits Bank").exit_code == 0
    assert json.loads(cli("tenants", "set", "limits-bank").output) == {
        "priority_class": "standard", "weight": 1, "max_concurrency": 8, "rate_limit_per_s": 20.0
    }  # fmt: skip
    changed = cli("tenants", "set", "limits-bank", "--priority-class", "batch", "--weight", "3", "--rate-limit", "0.5")
    assert json.loads(changed.output) == {
        "priority_class": "batch", "weight": 3, "max_concurrency": 8, "rate_limit_per_s": 0.5
    }  # fmt: skip
    assert cli("tenants", "set", "limits-bank", "--weight", "0").exit_code == 2  # refused before the database
    assert cli("tenants", "set", "nobody", "--weight", "2").exit_code == 1


def test_a_revoked_key_is_refused(cli: Any, database_url: str) -> None:
    created = cli("tenants", "create", "revoke-bank", "--name", "Revoke Bank")
    assert created.exit_code == 0, created.output
    key = created.output.strip().splitlines()[-1]
    other = cli("tenants", "issue-key", "revoke-bank", "--label", "spare").output.strip().splitlines()[-1]
    app = create_app(Settings.from_env({"ENGINE": "off", "API_KEY_CACHE_TTL": "0"}), database_url)
    with TestClient(app=app) as client:

        def status(api_key: str) -> int:
            r = client.post(
                "/v1/sessions", json={"customer_ref": "C-1"}, headers={"Authorization": f"Bearer {api_key}"}
            )
            return int(r.status_code)

        assert (status(key), status(other)) == (404, 404)  # authenticated; the bank has no customers yet

        listed = cli("tenants", "keys", "revoke-bank")
        assert listed.exit_code == 0, listed.output
        lines = listed.output.strip().splitlines()
        assert [line.split("  ")[:2] for line in lines] == [[key[:10], "initial"], [other[:10], "spare"]]
        assert [line.endswith("live") for line in lines] == [True, True]

        revoked = cli("tenants", "revoke-key", "revoke-bank", key[:10])
        assert revoked.exit_code == 0, revoked.output
        assert revoked.output.startswith(f"revoked revoke-bank's API key {key[:10]}  initial  created ")
        assert " revoked " in revoked.output
        assert (status(key), status(other)) == (401, 404)
        assert _authenticate(database_url, key) is None

        again = cli("tenants", "revoke-key", "revoke-bank", key[:10])
        assert (again.exit_code, again.output) == (1, f"Error: the API key {key[:10]!r} is already revoked\n")
        unknown = cli("tenants", "revoke-key", "revoke-bank", "ba_nothing")
        assert (unknown.exit_code, unknown.output) == (
            1,
            "Error: the tenant has no API key with prefix 'ba_nothing'\n",
        )
        nobody = cli("tenants", "revoke-key", "nobody", key[:10])
        assert (nobody.exit_code, nobody.output) == (1, "Error: unknown tenant 'nobody'\n")
        assert (
            cli("tenants", "keys", "revoke-bank").output.strip().splitlines()[0].split("  ")[-1].startswith("revoked ")
        )
