"""A profile's figures from its case results, the gate between two profiles, and the JSON and HTML
reports.

The gate (`--baseline A --candidate B`) fails when the candidate, on the same golden cases, has:
- any more status flips than the baseline (a status flip is an incident: zero tolerance);
- a wrong-amount, wrong-direction or wrong-driver rate more than 1 point (0.01) above the baseline's;
- a share of answers served as the model's more than 5 points (0.05) below the baseline's;
- a share of served answers complete against the answer policy below the baseline's, on the cases or
  on the golden dialogues' turns (any loss fails), or more claims repeated across those turns;
- a P99 time to first token more than 1.5x the baseline's and more than 50 ms above it (the floor
  keeps millisecond noise on a fast engine from failing the gate).
Rates are per case run (a case with two wrong amounts counts once for that kind).
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Sequence

import msgspec

from app.eval.dialogues import TurnResult
from app.eval.keyfields import KINDS, Kind
from app.eval.run import CaseResult, Profile
from app.reports.charts import bar_chart
from app.reports.stats import percentile

RATE_POINTS = 0.01  # wrong amount / direction / driver: the candidate's rate may exceed the baseline's by this
SERVED_POINTS = 0.05  # served as the model's: the candidate's share may fall short of the baseline's by this
TTFT_P99_RATIO = 1.5
TTFT_P99_FLOOR_MS = 50.0


class Thresholds(msgspec.Struct, frozen=True, kw_only=True):
    status_flip_increase: int = 0
    rate_points: float = RATE_POINTS
    served_points: float = SERVED_POINTS
    ttft_p99_ratio: float = TTFT_P99_RATIO
    ttft_p99_floor_ms: float = TTFT_P99_FLOOR_MS


class Latency(msgspec.Struct, frozen=True, kw_only=True):
    p50: float | None
    p99: float | None


class Tokens(msgspec.Struct, frozen=True, kw_only=True):
    prompt: int
    cached: int
    completion: int


class Summary(msgspec.Struct, frozen=True, kw_only=True):
    label: str
    engine: str
    target: str | None
    model: str
    cases: int
    served_as_model: int
    served_share: float
    served_by_locale: dict[str, float]  # the served share of each locale's cases
    fallbacks: dict[str, int]  # fallback rule -> cases
    # Answers served as the model's whose text has a key-field error: none, by construction (the
    # service says checked claims in reviewed wordings); counted so that a regression shows.
    served_errors: int
    # Served answers that say every claim the answer policy requires (app/domain/answer_policy.py):
    # their share of the served answers, overall and by intent and locale ("payment/zh-CN").
    complete_share: float
    complete_by: dict[str, float]
    errors: dict[str, int]  # key-field error kind -> cases with at least one (served text or refused plan)
    error_rates: dict[str, float]  # the same per case run
    ttft_ms: Latency
    e2e_ms: Latency
    tokens: Tokens  # totals over the cases
    results: list[CaseResult]
    # The golden dialogues' turns (app/eval/dialogues.py): served share, complete share of the served,
    # and claims said again without being asked for.
    dialogue_turns: list[TurnResult] = []
    dialogue_served_share: float = 1.0
    dialogue_complete_share: float = 1.0
    repeated_claims: int = 0


def _latency(values: Sequence[float]) -> Latency:
    if not values:
        return Latency(p50=None, p99=None)
    return Latency(p50=round(percentile(values, 50), 1), p99=round(percentile(values, 99), 1))


def _complete(served: Sequence[CaseResult]) -> float:
    return sum(not r.missing for r in served) / len(served) if served else 1.0


def summarize(profile: Profile, model: str, results: Sequence[CaseResult], turns: Sequence[TurnResult] = ()) -> Summary:
    n = len(results)
    served_turns = [t for t in turns if t.served_as_model]
    served = sum(r.served_as_model for r in results)
    errors: dict[str, int] = {kind: sum(any(f.kind == kind for f in r.findings) for r in results) for kind in KINDS}
    return Summary(
        label=profile.label,
        engine=profile.kind,
        target=profile.target,
        model=model,
        cases=n,
        served_as_model=served,
        served_share=served / n if n else 0.0,
        served_by_locale={
            locale: sum(r.served_as_model for r in mine) / len(mine)
            for locale in sorted({r.locale for r in results})
            if (mine := [r for r in results if r.locale == locale])
        },
        fallbacks=dict(Counter(r.reason for r in results if r.reason is not None).most_common()),
        served_errors=sum(r.served_as_model and bool(r.findings) for r in results),
        complete_share=_complete([r for r in results if r.served_as_model]),
        complete_by={
            group: _complete(mine)
            for group in sorted({f"{r.intent}/{r.locale}" for r in results})
            if (mine := [r for r in results if r.served_as_model and f"{r.intent}/{r.locale}" == group])
        },
        errors=errors,
        error_rates={kind: count / n if n else 0.0 for kind, count in errors.items()},
        ttft_ms=_latency([r.ttft_ms for r in results if r.ttft_ms is not None]),
        e2e_ms=_latency([r.e2e_ms for r in results]),
        tokens=Tokens(
            prompt=sum(r.prompt_tokens for r in results),
            cached=sum(r.cached_tokens for r in results),
            completion=sum(r.completion_tokens for r in results),
        ),
        results=list(results),
        dialogue_turns=list(turns),
        dialogue_served_share=len(served_turns) / len(turns) if turns else 1.0,
        dialogue_complete_share=sum(not t.missing for t in served_turns) / len(served_turns) if served_turns else 1.0,
        repeated_claims=sum(len(t.repeated) for t in turns),
    )


DEFAULT_THRESHOLDS = Thresholds()


def gate(baseline: Summary, candidate: Summary, limits: Thresholds = DEFAULT_THRESHOLDS) -> list[str]:
    """The thresholds the candidate fails against the baseline, each as one line; empty: it passes."""
    failed = []
    if candidate.served_errors:
        failed.append(f"key-field errors served: {candidate.served_errors} answers (any fails)")
    flips = candidate.errors["status_flip"] - baseline.errors["status_flip"]
    if flips > limits.status_flip_increase:
        failed.append(
            f"status flips: {candidate.errors['status_flip']} against {baseline.errors['status_flip']} "
            f"(any increase fails)"
        )
    kind: Kind
    for kind in ("wrong_amount", "wrong_direction", "wrong_driver"):
        base, cand = baseline.error_rates[kind], candidate.error_rates[kind]
        if cand > base + limits.rate_points + 1e-9:
            failed.append(f"{kind} rate: {cand:.1%} against {base:.1%} (more than +{limits.rate_points:.0%} fails)")
    if candidate.served_share < baseline.served_share - limits.served_points - 1e-9:
        failed.append(
            f"served as model: {candidate.served_share:.1%} against {baseline.served_share:.1%} "
            f"(more than -{limits.served_points:.0%} fails)"
        )
    if candidate.complete_share < baseline.complete_share - 1e-9:
        failed.append(
            f"complete answers: {candidate.complete_share:.1%} of served against {baseline.complete_share:.1%} "
            "(any loss fails)"
        )
    if candidate.dialogue_complete_share < baseline.dialogue_complete_share - 1e-9:
        failed.append(
            f"complete dialogue turns: {candidate.dialogue_complete_share:.1%} of served against "
            f"{baseline.dialogue_complete_share:.1%} (any loss fails)"
        )
    if candidate.repeated_claims > baseline.repeated_claims:
        failed.append(
            f"claims repeated in dialogues: {candidate.repeated_claims} against {baseline.repeated_claims} "
            "(any increase fails)"
        )
    base_p99, cand_p99 = baseline.ttft_ms.p99, candidate.ttft_ms.p99
    if (
        base_p99 is not None
        and cand_p99 is not None
        and cand_p99 > base_p99 * limits.ttft_p99_ratio
        and cand_p99 - base_p99 > limits.ttft_p99_floor_ms
    ):
        failed.append(
            f"P99 TTFT: {cand_p99:.0f} ms against {base_p99:.0f} ms (more than x{limits.ttft_p99_ratio:g} "
            f"and +{limits.ttft_p99_floor_ms:g} ms fails)"
        )
    return failed


class GateResult(msgspec.Struct, frozen=True, kw_only=True):
    baseline: str
    candidate: str
    passed: bool
    failures: list[str]


class Report(msgspec.Struct, frozen=True, kw_only=True):
    golden_cases: int
    prompt_version: str
    thresholds: Thresholds
    profiles: list[Summary]
    gate: GateResult | None = None


def table(summaries: Sequence[Summary]) -> str:
    """The figures as text, one profile a line."""
    header = f"{'profile':<16} {'cases':>5} {'served':>7} {'complete':>8} " + " ".join(f"{k:>15}" for k in KINDS)
    header += f" {'TTFT P50':>9} {'P99':>8} {'e2e P50':>9} {'P99':>8}  served by locale; fallbacks"
    lines = [header]
    for s in summaries:
        kinds = " ".join(f"{s.errors[k]:>6} ({s.error_rates[k]:>5.1%})" for k in KINDS)
        lines.append(
            f"{s.label:<16} {s.cases:>5} {s.served_share:>7.1%} {s.complete_share:>8.1%} {kinds} "
            f"{_ms(s.ttft_ms.p50):>9} {_ms(s.ttft_ms.p99):>8} {_ms(s.e2e_ms.p50):>9} {_ms(s.e2e_ms.p99):>8}  "
            + " ".join(f"{locale} {share:.1%}" for locale, share in s.served_by_locale.items())
            + f"; {s.fallbacks or ''}"
        )
        if s.dialogue_turns:
            lines.append(
                f"{'':<16} dialogues: {len(s.dialogue_turns)} turns, served {s.dialogue_served_share:.1%}, "
                f"complete {s.dialogue_complete_share:.1%} of served, {s.repeated_claims} claims repeated; "
                "complete by intent/locale: " + ", ".join(f"{k} {v:.0%}" for k, v in s.complete_by.items())
            )
    return "\n".join(lines)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def html_report(report: Report, title: str = "Key-field gate") -> str:
    """One self-contained page: the figures per profile, the gate, one chart per error kind, and the
    cases with key-field errors."""
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "profile",
            "engine",
            "model",
            "cases",
            "served as model",
            "complete (of served)",
            *KINDS,
            "TTFT P50/P99 ms",
            "e2e P50/P99 ms",
            "tokens prompt/cached/completion",
            "fallbacks",
        )
    )
    rows = "".join(
        f"<tr><td>{html.escape(s.label)}</td><td>{s.engine}</td><td>{html.escape(s.model)}</td><td>{s.cases}</td>"
        f"<td>{s.served_share:.1%}</td><td>{s.complete_share:.1%}</td>"
        + "".join(f"<td>{s.errors[k]} ({s.error_rates[k]:.1%})</td>" for k in KINDS)
        + f"<td>{_ms(s.ttft_ms.p50)} / {_ms(s.ttft_ms.p99)}</td><td>{_ms(s.e2e_ms.p50)} / {_ms(s.e2e_ms.p99)}</td>"
        f"<td>{s.tokens.prompt} / {s.tokens.cached} / {s.tokens.completion}</td>"
        f"<td>{html.escape(', '.join(f'{k}: {v}' for k, v in s.fallbacks.items()))}</td></tr>"
        for s in report.profiles
    )
    gate_html = ""
    if report.gate:
        g = report.gate
        verdict = "passed" if g.passed else "FAILED"
        items = "".join(f"<li>{html.escape(f)}</li>" for f in g.failures)
        gate_html = (
            f"<h2>Gate: {html.escape(g.candidate)} against {html.escape(g.baseline)}: {verdict}</h2><ul>{items}</ul>"
        )
    charts = "".join(
        f"<h2>{kind.replace('_', ' ')}: share of cases</h2>"
        + bar_chart(kind, {s.label: s.error_rates[kind] for s in report.profiles}, f"{kind} per profile")
        for kind in KINDS
    )
    details = []
    for s in report.profiles:
        bad = [r for r in s.results if r.findings]
        items = "".join(
            f"<tr><td>{html.escape(r.id)}</td><td>{r.status}</td>"
            f"<td>{html.escape('; '.join(f'{f.kind}: {f.detail}' for f in r.findings))}</td>"
            f"<td>{html.escape(r.text)}</td></tr>"
            for r in bad
        )
        heading = f"<h3>{html.escape(s.label)}: {len(bad)} cases with key-field errors</h3>"
        columns = "<tr><th>case</th><th>status</th><th>errors</th><th>answer</th></tr>"
        details.append(f"{heading}<table>{columns}{items}</table>")
    return (
        "<!doctype html><html lang=en><meta charset=utf-8>"
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}</style>"
        f"<h1>{html.escape(title)}</h1><p>{report.golden_cases} golden cases, prompt version "
        f"{html.escape(report.prompt_version)}. Key-field errors are counted in the model's raw answer, "
        "before validation.</p>"
        f"<table><tr>{head}</tr>{rows}</table>{gate_html}{charts}<h2>Cases with key-field errors</h2>"
        + "".join(details)
        + "</html>"
    )
