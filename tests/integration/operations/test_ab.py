"""`ab`: two engine profiles, each the service started with its settings, get the same traffic from
the same cache state; the report compares their answers and the eval's thresholds gate the candidate."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.domain.vocabulary import Channel
from app.replay.ab import EngineProfile
from app.replay.traffic import Arrival, dumps
from bench.fakes.plans import GOOD, plan
from bench.fakes.sglang_server import RunningFake, Script
from tests.factories import document

BILL = "Why is my bill higher than last month?"
PAYMENT = "Did my payment arrive?"
# At these times: a miss, another intent's miss, then each intent again (the fill after a miss has
# cached the canonical answers by then). Account A-1: 12.00 higher, nothing paid (bench/fakes/plans.py).
AS_OF = date(2026, 11, 10)  # before the due date: unpaid
TRAFFIC: list[tuple[float, Channel, str]] = [
    (0.0, "api", BILL),
    (1.5, "api", PAYMENT),
    (3.0, "widget", BILL),
    (4.5, "batch", PAYMENT),
]


def _fake(status: str) -> RunningFake:
    """An SGLang server whose model states this payment status, and the bill change truthfully."""
    running = RunningFake()
    payment = plan({"claim": "payment_status", "status": status})
    running.fake.answer_for = lambda prompt: Script(text=payment if "Did my payment arrive" in prompt[-400:] else GOOD)
    return running


@pytest.fixture
def fakes() -> Iterator[dict[str, RunningFake]]:
    servers = {"truthful": _fake("unpaid"), "again": _fake("unpaid"), "flipping": _fake("paid")}
    yield servers
    for server in servers.values():
        server.stop()


def _profile(path: Path, fake: RunningFake) -> str:
    path.write_text(f"# a GPU server\nENGINE=sglang\nSGLANG_URL={fake.url}\nBATCH_WORKER=0\nLOG_LEVEL=WARNING\n")
    return str(path)


async def test_the_candidate_that_flips_payment_statuses_fails_and_an_equal_one_passes(
    cli: Any, make_tenant: Any, load: Any, engine: AsyncEngine, fakes: dict[str, RunningFake], tmp_path: Path
) -> None:
    tenant = await make_tenant("interactive")
    await load(document(tenant.slug))
    arrivals = [
        Arrival(
            at=at,
            tenant=tenant.slug,
            channel=channel,
            account_ref="A-1",
            question=question,
            locale="en",
            customer_ref="C-1001",
            as_of=AS_OF,
        )
        for at, channel, question in TRAFFIC
    ]
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_bytes(dumps(arrivals))
    base = _profile(tmp_path / "bf16.env", fakes["truthful"])
    # Four times the arrivals' pace: the fake engines answer in milliseconds, so each miss's fill has cached
    # its answer long before the next arrival.
    common = ["--traffic", str(traffic), "--key", f"{tenant.slug}={tenant.key}", "--speed", "4"]

    def ab(*args: str) -> Any:  # in a thread: the command runs its own event loop
        return cli("ab", *args)

    bad = await asyncio.to_thread(
        ab,
        "--baseline",
        base,
        "--candidate",
        _profile(tmp_path / "fp8.env", fakes["flipping"]),
        *common,
        "--json",
        str(tmp_path / "bad.json"),
        "--html",
        str(tmp_path / "bad.html"),
    )
    assert bad.exit_code == 1, bad.output
    assert "gate failed: status flips: 2 against 0 (any increase fails)" in bad.output
    report = json.loads((tmp_path / "bad.json").read_text())
    b, c = report["baseline"], report["candidate"]
    assert (b["label"], c["label"]) == ("bf16", "fp8")
    # Both profiles started from an empty answer cache and a flushed engine cache, though the
    # baseline's run filled the cache before the candidate's began.
    assert (b["cache_rows_at_start"], c["cache_rows_at_start"]) == (0, 0)
    assert (b["engine_cache"], c["engine_cache"]) == ("flushed", "flushed")
    assert fakes["truthful"].fake.flushes == 1
    assert fakes["flipping"].fake.flushes == 1
    assert (b["answered"], c["answered"]) == (4, 4)
    assert (b["served_share"], c["served_share"]) == (1.0, 0.5)
    assert b["summary"]["errors"] == {"status_flip": 0, "wrong_amount": 0, "wrong_direction": 0, "wrong_driver": 0}
    assert c["summary"]["errors"] == {"status_flip": 2, "wrong_amount": 0, "wrong_direction": 0, "wrong_driver": 0}
    assert c["summary"]["fallbacks"] == {"status_claim": 2}
    assert c["sources"]["fallback"] == 2
    assert b["cached_token_share"] > 0  # the static prompt prefix, served from the engine's cache
    assert set(b["stages"]) == {
        "admission wait",
        "engine queue",
        "time to first token",
        "engine",
        "server total",
        "end to end (client)",
    }
    assert b["stages"]["end to end (client)"]["n"] == 4
    assert report["gate"]["passed"] is False
    # The answers that differ, side by side: the payment questions, the model's against the fallback.
    differing = report["differing"]
    assert [d["seq"] for d in differing] == [1, 3]
    assert [d["candidate"]["source"] for d in differing] == ["fallback", "fallback"]
    assert [d["candidate"]["reason"] for d in differing] == ["status_claim", "status_claim"]
    assert "model" in {d["baseline"]["source"] for d in differing}
    page = (tmp_path / "bad.html").read_text()
    assert "Gate: fp8 against bf16: FAILED" in page
    async with engine.connect() as conn:  # the candidate's own fill is left behind
        rows = await conn.execute(text("SELECT count(*) FROM answer_cache WHERE tenant_id = :t"), {"t": tenant.id})
        assert rows.scalar_one() > 0

    equal = await asyncio.to_thread(
        ab,
        "--baseline",
        base,
        "--candidate",
        _profile(tmp_path / "again.env", fakes["again"]),
        *common,
        "--cache",
        "warm",
        # Faster than real time: after the warm-up has settled (no new cache row for 2 s) every
        # measured request is a cache hit for both profiles (the answer_cache key is the facts and
        # the intent; duplicate fills do nothing), so pacing changes no figure checked below.
        "--speed",
        "10",
        "--json",
        str(tmp_path / "equal.json"),
    )
    assert equal.exit_code == 0, equal.output
    assert "gate passed: again is not worse than bf16" in equal.output
    report = json.loads((tmp_path / "equal.json").read_text())
    # Warm: both answered the same warm-up first, so both start with the same canonical answers cached.
    b, c = report["baseline"], report["candidate"]
    assert b["cache_rows_at_start"] == c["cache_rows_at_start"]
    assert b["cache_rows_at_start"] > 0
    assert (b["served_share"], c["served_share"]) == (1.0, 1.0)
    assert report["differing"] == []


def test_profiles_are_files_or_inline_and_name_a_wrong_setting(tmp_path: Path) -> None:
    path = tmp_path / "fp8.env"
    path.write_text("# comment\nENGINE=sglang\n\nSGLANG_PROFILE='fp8+eagle3:sglang-0.5.4'\nSGLANG_API_KEY=s3cret\n")
    profile = EngineProfile.parse(str(path))
    assert profile.label == "fp8"
    assert profile.overrides == {
        "ENGINE": "sglang",
        "SGLANG_PROFILE": "fp8+eagle3:sglang-0.5.4",
        "SGLANG_API_KEY": "s3cret",
    }
    assert profile.shown()["SGLANG_API_KEY"] == "***"
    inline = EngineProfile.parse("q8:ENGINE=embedded,MODEL_PATH=/models/x.Q8_0.gguf")
    assert (inline.label, inline.overrides) == ("q8", {"ENGINE": "embedded", "MODEL_PATH": "/models/x.Q8_0.gguf"})
    with pytest.raises(ValueError, match="'ENGNE=sglang' is not a setting"):
        EngineProfile.parse("x:ENGNE=sglang")
    with pytest.raises(ValueError, match="DATABASE_URL is not a profile's"):
        EngineProfile.parse("x:DATABASE_URL=postgresql://elsewhere/db")


def test_the_command_refuses_a_setting_the_service_cannot_run_with(cli: Any, tmp_path: Path) -> None:
    traffic = tmp_path / "t.jsonl"
    traffic.write_bytes(b"")
    result = cli("ab", "--baseline", "a:ENGINE=off", "--candidate", "b:ENGINE=gpu", "--traffic", str(traffic))
    assert result.exit_code == 2
    assert "--candidate" in result.output
    assert "ENGINE" in result.output
