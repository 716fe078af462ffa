"""The A/B report, as text and as one self-contained HTML page: the two profiles side by side, the
gate's verdict, latency CDFs and error-kind bars (app/reports/charts.py), the answers that differ."""

from __future__ import annotations

import html
from collections.abc import Callable

from app.eval.keyfields import KINDS
from app.replay.ab_compare import END_TO_END, AbReport, Said, Side, Stage, answered
from app.reports.charts import bar_chart, cdf_chart


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def _stage(stage: Stage) -> str:
    return f"{_ms(stage.p50)} / {_ms(stage.p90)} / {_ms(stage.p99)} (n={stage.n})"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in counts.items()) or "none"


def rows(report: AbReport) -> list[tuple[str, str, str]]:
    """(figure, baseline, candidate): the comparison, one figure a row."""
    b, c = report.baseline, report.candidate

    def row(name: str, figure: Callable[[Side], str]) -> tuple[str, str, str]:
        return name, figure(b), figure(c)

    table = [
        row("settings", lambda s: ", ".join(f"{k}={v}" for k, v in s.settings.items()) or "(environment)"),
        row("engine", lambda s: f"{s.engine} {s.summary.model}"),
        row("answer-cache rows at start", lambda s: str(s.cache_rows_at_start)),
        row("engine prefix cache", lambda s: s.engine_cache),
        row("requests answered", lambda s: f"{s.answered} of {s.requests}"),
        row("refused", lambda s: _counts(s.refused)),
        row("served (model or cache)", lambda s: _pct(s.served_share)),
        row("sources", lambda s: _counts(s.sources)),
        row("answer-cache hits", lambda s: _pct(s.cache_hit_share)),
        row("cached-token share", lambda s: _pct(s.cached_token_share)),
        row("fallback reasons", lambda s: _counts(s.summary.fallbacks)),
    ]
    for kind in KINDS:
        count = {s.label: f"{s.summary.errors[kind]} ({s.summary.error_rates[kind]:.1%})" for s in (b, c)}
        table.append((kind, count[b.label], count[c.label]))
    for name in b.stages:
        table.append((f"{name} P50/P90/P99 ms", _stage(b.stages[name]), _stage(c.stages[name])))
    return table


def text_report(report: AbReport) -> str:
    b, c = report.baseline, report.candidate
    width = max(len(name) for name, _, _ in rows(report))
    lines = [f"{'':<{width}}  {b.label:<40}  {c.label}"]
    lines += [f"{name:<{width}}  {x:<40}  {y}" for name, x, y in rows(report)]
    lines.append(f"answers that differ: {len(report.differing)} of {report.requests}")
    return "\n".join(lines)


def _said(said: Said) -> str:
    if said.source is None:
        return f"<em>no answer (HTTP {said.status or '-'})</em>"
    why = f" ({html.escape(said.reason)})" if said.reason else ""
    return f"<b>{html.escape(said.source)}</b>{why}: {html.escape(said.text)}"


def html_report(report: AbReport) -> str:
    """One page: the figures side by side, the verdict, the charts, the answers that differ."""
    b, c, g = report.baseline, report.candidate, report.gate
    e2e = {s.label: [r.e2e_ms for r in s.summary.results if answered(r)] for s in (b, c)}
    ttft = {s.label: [r.ttft_ms for r in s.summary.results if r.ttft_ms is not None] for s in (b, c)}
    head = (
        f"<tr><th>figure</th><th>{html.escape(b.label)} (baseline)</th><th>{html.escape(c.label)} (candidate)</th></tr>"
    )
    body = "".join(
        f"<tr><td>{html.escape(n)}</td><td>{html.escape(x)}</td><td>{html.escape(y)}</td></tr>"
        for n, x, y in rows(report)
    )
    verdict = "passed" if g.passed else "FAILED"
    failures = "".join(f"<li>{html.escape(f)}</li>" for f in g.failures) or "<li>no threshold failed</li>"
    kinds = "".join(
        f"<h3>{kind.replace('_', ' ')}</h3>"
        + bar_chart(kind, {s.label: s.summary.error_rates[kind] for s in (b, c)}, f"{kind}: share of requests")
        for kind in KINDS
    )
    diffs = "".join(
        f"<tr><td>{d.seq}</td><td>{html.escape(d.tenant)} / {d.channel} / {html.escape(d.account_ref)}</td>"
        f"<td>{html.escape(d.question)}</td><td>{_said(d.baseline)}</td>"
        f"<td>{_said(d.candidate)}</td></tr>"
        for d in report.differing
    )
    title = f"A/B: {b.label} against {c.label}"
    return (
        "<!doctype html><html lang=en><meta charset=utf-8>"
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}"
        ".failed{color:#a00}.passed{color:#060}</style>"
        f"<h1>{html.escape(title)}</h1>"
        f"<p>{report.requests} requests of {html.escape(report.traffic)}, replayed open loop at {report.speed:g}x "
        f"against each profile in turn, caches {report.cache} for both. Key-field errors: the eval's extractor "
        "over each served text against that answer's facts, and the refused plans' errors. Served: the model's "
        "checked answer or a cached one.</p>"
        f'<h2 class="{verdict.lower()}">Gate: {html.escape(c.label)} against {html.escape(b.label)}: {verdict}</h2>'
        f"<ul>{failures}</ul><table>{head}{body}</table>"
        "<h2>End-to-end latency</h2>"
        + cdf_chart("e2e", e2e, f"{END_TO_END}: from each request's scheduled send time")
        + "<h2>Time to first token</h2>"
        + cdf_chart(
            "ttft", ttft, "Time to first token, as the service's timings report it (answers that ran the engine)"
        )
        + f"<h2>Key-field errors by kind</h2>{kinds}"
        + f"<h2>Answers that differ ({len(report.differing)} of {report.requests})</h2>"
        + f"<table><tr><th>#</th><th>who</th><th>question</th><th>{html.escape(b.label)}</th>"
        + f"<th>{html.escape(c.label)}</th></tr>{diffs}</table></html>"
    )
