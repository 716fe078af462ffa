"""The gate's thresholds, each on its own (app/eval/report.py)."""

from __future__ import annotations

import msgspec

from app.eval.report import Latency, Summary, Tokens, gate

ZERO = {"status_flip": 0, "wrong_amount": 0, "wrong_direction": 0, "wrong_driver": 0}


def summary(label: str, *, errors: dict[str, int] | None = None, served: int = 80, ttft_p99: float = 400.0) -> Summary:
    counts = ZERO | (errors or {})
    return Summary(
        label=label, engine="sglang", target=None, model="m", cases=100, served_as_model=served,
        served_share=served / 100, served_by_locale={}, fallbacks={}, served_errors=0, complete_share=1.0,
        complete_by={}, errors=counts,
        error_rates={k: v / 100 for k, v in counts.items()},
        ttft_ms=Latency(p50=100.0, p99=ttft_p99), e2e_ms=Latency(p50=900.0, p99=2000.0),
        tokens=Tokens(prompt=1, cached=0, completion=1), results=[],
    )  # fmt: skip


BASE = summary("base", errors={"status_flip": 1, "wrong_amount": 10, "wrong_direction": 2, "wrong_driver": 3})


def candidate(**changes: object) -> Summary:
    return msgspec.structs.replace(BASE, label="cand", **changes)


def test_the_same_figures_pass() -> None:
    assert gate(BASE, candidate()) == []


def test_one_more_status_flip_fails() -> None:
    errors = BASE.errors | {"status_flip": 2}
    assert gate(BASE, summary("cand", errors=errors)) == ["status flips: 2 against 1 (any increase fails)"]


def test_rates_may_rise_by_one_point_and_no_more() -> None:
    assert gate(BASE, summary("cand", errors=BASE.errors | {"wrong_amount": 11})) == []
    assert gate(BASE, summary("cand", errors=BASE.errors | {"wrong_amount": 12, "wrong_driver": 5})) == [
        "wrong_amount rate: 12.0% against 10.0% (more than +1% fails)",
        "wrong_driver rate: 5.0% against 3.0% (more than +1% fails)",
    ]


def test_the_served_share_may_fall_by_five_points_and_no_more() -> None:
    assert gate(BASE, summary("cand", errors=BASE.errors, served=75)) == []
    assert gate(BASE, summary("cand", errors=BASE.errors, served=74)) == [
        "served as model: 74.0% against 80.0% (more than -5% fails)"
    ]


def test_p99_ttft_may_grow_by_half_or_by_50_ms() -> None:
    assert gate(BASE, summary("cand", errors=BASE.errors, ttft_p99=600.0)) == []
    assert gate(BASE, summary("cand", errors=BASE.errors, ttft_p99=601.0)) == [
        "P99 TTFT: 601 ms against 400 ms (more than x1.5 and +50 ms fails)"
    ]
    fast = summary("fast", errors=BASE.errors, ttft_p99=10.0)
    assert gate(fast, summary("cand", errors=BASE.errors, ttft_p99=40.0)) == []  # x4, but only 30 ms


def test_any_served_key_field_error_fails() -> None:
    assert gate(BASE, candidate(served_errors=1)) == ["key-field errors served: 1 answers (any fails)"]


def test_a_served_answer_that_loses_a_required_claim_fails() -> None:
    assert gate(BASE, candidate(complete_share=1.0)) == []
    assert gate(BASE, candidate(complete_share=0.99)) == [
        "complete answers: 99.0% of served against 100.0% (any loss fails)"
    ]
