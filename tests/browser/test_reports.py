"""The replay, A/B and eval reports open in Chromium without an error, and every chart is drawn: a plot
area with its axes, tick labels, units and legend (app/reports/charts.py, matplotlib)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from playwright.async_api import Page

from app.eval.keyfields import KINDS
from app.eval.report import GateResult, Latency, Report, Summary, Thresholds, Tokens
from app.eval.report import html_report as eval_report
from app.eval.report import summarize as eval_summary
from app.eval.run import CaseResult, Profile
from app.replay.ab_compare import AbReport, AnswerPair, Said, Side, Stage
from app.replay.ab_report import html_report as ab_report
from app.replay.report import Row, Slo, summarize
from app.replay.report import html_report as replay_report
from app.replay.run import Sample


def _replay_page() -> str:
    rng = random.Random(5)

    def samples(scale_ms: float) -> list[Sample]:
        return [
            Sample(tenant="northbridge", channel=rng.choice(["api", "widget"]), status=200,
                   e2e_ms=rng.expovariate(1 / scale_ms), ttft_ms=rng.expovariate(2 / scale_ms), source="model")
            for _ in range(300)
        ]  # fmt: skip

    slo = Slo(ttft_ms=2000, e2e_ms=5000)
    runs: dict[str, tuple[Sequence[Sample], list[Row]]] = {
        name: (s, summarize(s, slo)) for name, s in (("bf16", samples(400)), ("fp8", samples(250)))
    }
    return replay_report(runs, slo, "Replay: bf16 against fp8")


def _eval_page() -> str:
    def profile(label: str, flips: int) -> Summary:
        errors: dict[str, int] = {kind: flips if kind == "status_flip" else 0 for kind in KINDS}
        return Summary(
            label=label, engine="sglang", target=None, model="fake/model", cases=80, served_as_model=80 - flips,
            served_share=(80 - flips) / 80, served_by_locale={"en": 1.0, "zh-CN": 1.0}, fallbacks={},
            served_errors=0, complete_share=1.0, complete_by={"payment/en": 1.0},
            errors=errors, error_rates={k: v / 80 for k, v in errors.items()},
            ttft_ms=Latency(p50=40.0, p99=90.0), e2e_ms=Latency(p50=200.0, p99=400.0),
            tokens=Tokens(prompt=1000, cached=800, completion=500), results=[],
        )  # fmt: skip

    gate = GateResult(baseline="good", candidate="flips", passed=False, failures=["status flips: 4 against 0"])
    report = Report(golden_cases=80, prompt_version="v1", thresholds=Thresholds(), profiles=[
        profile("good", 0), profile("flips", 4)], gate=gate)  # fmt: skip
    return eval_report(report)


def _ab_page() -> str:
    rng = random.Random(7)

    def side(label: str, flips: int, scale_ms: float) -> Side:
        results = [
            CaseResult(
                id=f"#{i}",
                intent="payment",
                locale="en",
                status="unpaid",
                served_as_model=i >= flips,
                reason="status_claim" if i < flips else None,
                text="",
                plan="[]",
                findings=[],
                ttft_ms=rng.expovariate(4 / scale_ms),
                e2e_ms=rng.expovariate(1 / scale_ms),
                prompt_tokens=500,
                cached_tokens=400,
                completion_tokens=40,
            )
            for i in range(200)
        ]
        summary = eval_summary(Profile(label=label, kind="sglang", target=None), "fake/model", results)
        stage = Stage(n=200, p50=40.0, p90=80.0, p99=120.0)
        return Side(
            label=label,
            engine="sglang",
            target=None,
            settings={"SGLANG_URL": "http://gpu"},
            cache_rows_at_start=0,
            engine_cache="flushed",
            requests=200,
            answered=200,
            refused={},
            sources={"model": 200 - flips, "fallback": flips},
            served_share=summary.served_share,
            cache_hit_share=0.0,
            cached_token_share=0.8,
            stages={"engine": stage},
            summary=summary,
        )

    said = Said(status=200, source="model", reason=None, text="Your payment has not arrived yet.")
    refused = Said(status=200, source="fallback", reason="status_claim", text="We have not received a payment.")
    report = AbReport(
        traffic="t.jsonl",
        requests=200,
        cache="cold",
        speed=1.0,
        thresholds=Thresholds(),
        baseline=side("bf16", 0, 400),
        candidate=side("fp8", 8, 250),
        gate=GateResult(baseline="bf16", candidate="fp8", passed=False, failures=["status flips: 8"]),
        differing=[
            AnswerPair(
                seq=3,
                tenant="northbridge",
                channel="api",
                account_ref="A-1",
                question="Did my payment arrive?",
                baseline=said,
                candidate=refused,
            )
        ],
    )
    return ab_report(report)


async def _open(page: Page, tmp_path: Path, name: str, content: str) -> list[str]:
    """The page as a file, opened the way a reviewer opens it; what went wrong on the way."""
    problems: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    await page.goto(path.as_uri())
    return problems


async def _chart(page: Page, kind: str) -> dict[str, Any]:
    """What a chart shows: its size, the texts on it (ticks, axis labels, legend)."""
    figure = page.locator(f'figure.chart[data-kind="{kind}"]')
    assert await figure.count() == 1, kind
    box = await figure.locator("svg").bounding_box()
    assert box is not None, kind
    texts = await figure.locator("svg text").all_text_contents()
    lines = await figure.locator("svg path, svg use, svg rect").count()
    return {"width": box["width"], "height": box["height"], "texts": " ".join(texts), "marks": lines}


async def test_the_replay_report_draws_both_latency_charts(page: Page, tmp_path: Path) -> None:
    assert await _open(page, tmp_path, "replay.html", _replay_page()) == []
    for kind in ("e2e", "ttft"):
        chart = await _chart(page, kind)
        assert chart["width"] > 300
        assert chart["height"] > 150
        for shown in ("latency (ms, log scale)", "share of requests", "100%", "P50", "P99", "bf16 (300)", "fp8 (300)"):
            assert shown in chart["texts"], (kind, shown)
        assert chart["marks"] > 20  # the axes, the ticks, two curves


async def test_the_eval_report_draws_a_chart_per_error_kind(page: Page, tmp_path: Path) -> None:
    assert await _open(page, tmp_path, "eval.html", _eval_page()) == []
    for kind in KINDS:
        chart = await _chart(page, kind)
        assert chart["width"] > 300
        for shown in ("share of cases", "good", "flips"):
            assert shown in chart["texts"], (kind, shown)
    assert "5.0%" in (await _chart(page, "status_flip"))["texts"]  # 4 of 80, labelled on its bar


async def test_the_ab_report_draws_latency_and_error_charts_for_both_profiles(page: Page, tmp_path: Path) -> None:
    assert await _open(page, tmp_path, "ab.html", _ab_page()) == []
    for kind in ("e2e", "ttft"):
        chart = await _chart(page, kind)
        assert chart["width"] > 300
        for shown in ("latency (ms, log scale)", "share of requests", "P99", "bf16 (200)", "fp8 (200)"):
            assert shown in chart["texts"], (kind, shown)
        assert chart["marks"] > 20
    for kind in KINDS:
        chart = await _chart(page, kind)
        for shown in ("share of cases", "bf16", "fp8"):
            assert shown in chart["texts"], (kind, shown)
    assert "4.0%" in (await _chart(page, "status_flip"))["texts"]  # 8 of 200, labelled on its bar
    assert await page.get_by_text("Gate: fp8 against bf16: FAILED").count() == 1
    assert await page.get_by_text("We have not received a payment.", exact=False).count() == 1
