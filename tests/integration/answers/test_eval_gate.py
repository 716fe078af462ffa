"""`bill-assistant eval`: the key-field gate, with the fake SGLang server scripted per golden case
(a profile that plans correctly and one whose plan flips the payment status: the seed's
已还款/未还款 incident), and three cases on the real embedded model."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from app.answers.planning import plan_job
from app.cli import main
from app.eval import golden
from app.eval.run import demo_policy
from app.settings import Settings
from bench.fakes.plans import plan, true_plan
from bench.fakes.sglang_server import RunningFake, Script

# The zh-CN payment questions whose plan the flipping profile turns around: the status it claims.
FLIPPED = {
    "G-CNY-1/2026-11-05/zh-CN/payment": "paid",  # unpaid, said to be repaid: the seed incident
    "G-USD-1/2026-11-30/zh-CN/payment": "paid",  # overdue
    "G-CNY-1/2026-11-20/zh-CN/payment": "unpaid",  # paid, said not to be
    "G-EUR-1/2026-11-15/zh-CN/payment": "unpaid",
}
INTENTS = ["bill_change", "charge", "fees_interest", "payment"]
KINDS = ["status_flip", "wrong_amount", "wrong_direction", "wrong_driver"]


def scripted(flip: bool) -> Callable[[str], Script | None]:
    """Plans each golden case correctly, or with the flipped status."""
    policy, template = demo_policy(), Settings.from_env().engine.chat_template
    answers = {}
    for case in golden.load():
        prompt = plan_job(
            facts=case.facts, intent=case.intent, question=case.question, locale=case.locale, policy=policy,
            chat_template=template, request_id="x", priority=0, max_tokens=1,
        ).request.prompt  # fmt: skip
        text = true_plan(case.facts, case.intent, case.question)
        if flip and case.id in FLIPPED:
            text = plan({"claim": "payment_status", "status": FLIPPED[case.id]})
        answers[prompt] = Script(text=text, token_delay_s=0.0)
    return answers.get


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    monkeypatch.setenv("ENGINE_MAX_TOKENS", "1000")  # the fake counts words and spaces as tokens
    runner = CliRunner()
    return lambda *args: runner.invoke(main, ["eval", *args], catch_exceptions=False)


@pytest.fixture
def flipping() -> Iterator[RunningFake]:
    server = RunningFake()
    server.fake.answer_for = scripted(flip=True)
    yield server
    server.stop()


def test_the_gate_fails_a_candidate_that_flips_the_payment_status(
    cli: Callable[..., Result], fake_sglang: RunningFake, flipping: RunningFake, tmp_path: Path
) -> None:
    fake_sglang.fake.answer_for = scripted(flip=False)
    report, page = tmp_path / "eval.json", tmp_path / "eval.html"
    result = cli(
        "--profile", f"good=sglang:{fake_sglang.url}", "--profile", f"flips=sglang:{flipping.url}",
        "--baseline", "good", "--candidate", "flips", "--concurrency", "8", "--json", str(report), "--html", str(page),
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "gate failed: status flips: 4 against 0 (any increase fails)" in result.output

    data: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    assert set(data) == {"golden_cases", "prompt_version", "thresholds", "profiles", "gate"}
    assert data["golden_cases"] == 80
    assert data["thresholds"] == {
        "status_flip_increase": 0, "rate_points": 0.01, "served_points": 0.05, "ttft_p99_ratio": 1.5,
        "ttft_p99_floor_ms": 50.0,
    }  # fmt: skip
    good, flips = data["profiles"]
    assert set(good) == {
        "label", "engine", "target", "model", "cases", "served_as_model", "served_share", "served_by_locale",
        "fallbacks", "served_errors", "complete_share", "complete_by", "errors",
        "error_rates", "ttft_ms", "e2e_ms", "tokens", "results", "dialogue_turns", "dialogue_served_share",
        "dialogue_complete_share", "repeated_claims",
    }  # fmt: skip
    assert (good["label"], good["engine"], good["target"], good["cases"]) == ("good", "sglang", fake_sglang.url, 80)
    assert good["errors"] == dict.fromkeys(KINDS, 0)
    assert (good["served_as_model"], good["served_share"], good["fallbacks"], good["served_errors"]) == (80, 1.0, {}, 0)
    assert (flips["served_as_model"], flips["fallbacks"], flips["served_errors"]) == (76, {"status_claim": 4}, 0)
    assert good["served_by_locale"] == {"en": 1.0, "zh-CN": 1.0}
    assert flips["served_by_locale"] == {"en": 1.0, "zh-CN": 40 / 44}  # 44 zh-CN cases, 4 flipped
    assert flips["errors"] == {"status_flip": 4, "wrong_amount": 0, "wrong_direction": 0, "wrong_driver": 0}
    assert flips["error_rates"]["status_flip"] == 4 / 80
    flipped = {r["id"]: [f["detail"] for f in r["findings"]] for r in flips["results"] if r["findings"]}

    def said(claimed: str, status: str) -> str:  # the refusal as the audit row stores it
        return f'plan: status_claim:status_said {{"claimed_status":"{claimed}","status":"{status}"}}'

    assert flipped == {
        "G-CNY-1/2026-11-05/zh-CN/payment": [
            'plan: status_claim:status_said {"claimed_status":"paid","status":"unpaid"}'
        ],
        "G-USD-1/2026-11-30/zh-CN/payment": [
            'plan: status_claim:status_said {"claimed_status":"paid","status":"overdue"}'
        ],
        "G-CNY-1/2026-11-20/zh-CN/payment": [
            'plan: status_claim:status_said {"claimed_status":"unpaid","status":"paid"}'
        ],
        "G-EUR-1/2026-11-15/zh-CN/payment": [
            'plan: status_claim:status_said {"claimed_status":"unpaid","status":"paid"}'
        ],
    }
    assert set(good["ttft_ms"]) == {"p50", "p99"}
    assert good["ttft_ms"]["p50"] > 0
    assert good["tokens"]["completion"] == sum(r["completion_tokens"] for r in good["results"])
    # The required claims are prefilled: the model decodes only the end of each plan (a few tokens).
    assert 80 <= good["tokens"]["completion"] < 400
    # Complete by construction, on the cases and on the golden dialogues, nothing said twice.
    assert (good["complete_share"], good["dialogue_complete_share"], good["repeated_claims"]) == (1.0, 1.0, 0)
    assert len(good["dialogue_turns"]) == 29
    assert good["dialogue_served_share"] == 1.0
    assert set(good["complete_by"]) == {f"{i}/{loc}" for i in INTENTS for loc in ("en", "zh-CN")}
    assert data["gate"]["passed"] is False
    assert data["gate"]["failures"][0] == "status flips: 4 against 0 (any increase fails)"

    html = page.read_text(encoding="utf-8")
    assert html.count('<figure class="chart"') == 4
    for kind in KINDS:
        assert html.count(f'data-kind="{kind}"') == 1
    assert "Gate: flips against good: FAILED" in html


def test_the_gate_passes_a_candidate_as_good_as_the_baseline(
    cli: Callable[..., Result], fake_sglang: RunningFake
) -> None:
    fake_sglang.fake.answer_for = scripted(flip=False)
    result = cli(
        "--profile", f"a=sglang:{fake_sglang.url}", "--profile", f"a-again=sglang:{fake_sglang.url}",
        "--baseline", "a", "--candidate", "a-again", "--limit", "20", "--concurrency", "2",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "gate passed: a-again is not worse than a" in result.output


def test_profiles_and_labels_are_checked(cli: Callable[..., Result]) -> None:
    assert cli("--profile", "x=gpu:foo").exit_code == 2
    assert cli("--profile", "x=sglang").exit_code == 2
    wrong = cli("--profile", "x=sglang:http://127.0.0.1:9", "--baseline", "x", "--candidate", "y")
    assert (wrong.exit_code, "no profile is labelled 'y'" in wrong.output) == (2, True)


@pytest.mark.model
def test_three_golden_cases_on_the_embedded_model(
    cli: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGINE_MAX_TOKENS", "160")  # the service's default: the model's answers stop there
    report = tmp_path / "eval.json"
    result = cli("--profile", "smollm2=embedded", "--limit", "3", "--json", str(report))
    assert result.exit_code == 0, result.output
    (profile,) = json.loads(report.read_text(encoding="utf-8"))["profiles"]
    assert (profile["engine"], profile["model"], profile["cases"]) == ("embedded", "SmolLM2-135M-Instruct.Q4_1.gguf", 3)
    assert [r["id"] for r in profile["results"]] == [c.id for c in golden.load(limit=3)]
    assert profile["served_as_model"] + sum(profile["fallbacks"].values()) == 3
