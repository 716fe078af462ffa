"""Replay results: per tenant and channel, percentiles, goodput against SLOs, errors; text and HTML."""

from __future__ import annotations

import html
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from app.replay.run import Sample
from app.reports.charts import cdf_chart
from app.reports.stats import percentile


@dataclass(frozen=True, kw_only=True)
class Slo:
    ttft_ms: float
    e2e_ms: float

    def met(self, s: Sample) -> bool:
        return s.status == 200 and s.e2e_ms <= self.e2e_ms and (s.ttft_ms is None or s.ttft_ms <= self.ttft_ms)


@dataclass(frozen=True, kw_only=True)
class Row:
    tenant: str
    channel: str
    requests: int
    ttft: tuple[float, float, float]
    e2e: tuple[float, float, float]
    goodput: float  # share of requests answered within both SLOs
    errors: dict[str, int]


def summarize(samples: Sequence[Sample], slo: Slo) -> list[Row]:
    groups: dict[tuple[str, str], list[Sample]] = defaultdict(list)
    for s in samples:
        groups[(s.tenant, s.channel)].append(s)
        groups[("all", "all")].append(s)
    rows = []
    for (tenant, channel), group in sorted(groups.items(), key=lambda kv: (kv[0] == ("all", "all"), kv[0])):
        ok = [s for s in group if s.status == 200]
        ttfts = [s.ttft_ms for s in ok if s.ttft_ms is not None]
        e2es = [s.e2e_ms for s in ok]
        rows.append(
            Row(
                tenant=tenant,
                channel=channel,
                requests=len(group),
                ttft=(percentile(ttfts, 50), percentile(ttfts, 90), percentile(ttfts, 99)),
                e2e=(percentile(e2es, 50), percentile(e2es, 90), percentile(e2es, 99)),
                goodput=sum(slo.met(s) for s in group) / len(group),
                errors=dict(Counter(str(s.status or "connection") for s in group if s.status != 200)),
            )
        )
    return rows


def table(rows: Sequence[Row], title: str = "") -> str:
    header = f"{'tenant':<14} {'channel':<7} {'reqs':>5} {'TTFT P50':>9} {'P90':>8} {'P99':>8} "
    header += f"{'e2e P50':>9} {'P90':>8} {'P99':>8} {'goodput':>8}  errors"
    lines = [title, header] if title else [header]
    for r in rows:
        lines.append(
            f"{r.tenant:<14} {r.channel:<7} {r.requests:>5} {r.ttft[0]:>9.1f} {r.ttft[1]:>8.1f} {r.ttft[2]:>8.1f} "
            f"{r.e2e[0]:>9.1f} {r.e2e[1]:>8.1f} {r.e2e[2]:>8.1f} {r.goodput:>7.0%}  {r.errors or ''}"
        )
    return "\n".join(lines)


def html_report(runs: dict[str, tuple[Sequence[Sample], list[Row]]], slo: Slo, title: str) -> str:
    """One page: a table per run and end-to-end and TTFT latency CDFs of all runs."""
    sections = []
    for name, (_, rows) in runs.items():
        head = "".join(
            f"<th>{h}</th>"
            for h in ("tenant", "channel", "requests", "TTFT P50/P90/P99 ms", "e2e P50/P90/P99 ms", "goodput", "errors")
        )
        body = "".join(
            f"<tr><td>{html.escape(r.tenant)}</td><td>{r.channel}</td><td>{r.requests}</td>"
            f"<td>{r.ttft[0]:.1f} / {r.ttft[1]:.1f} / {r.ttft[2]:.1f}</td>"
            f"<td>{r.e2e[0]:.1f} / {r.e2e[1]:.1f} / {r.e2e[2]:.1f}</td><td>{r.goodput:.0%}</td>"
            f"<td>{html.escape(str(r.errors or ''))}</td></tr>"
            for r in rows
        )
        sections.append(f"<h2>{html.escape(name)}</h2><table><tr>{head}</tr>{body}</table>")
    e2e = {name: [s.e2e_ms for s in samples if s.status == 200] for name, (samples, _) in runs.items()}
    ttft = {name: [s.ttft_ms for s in samples if s.ttft_ms is not None] for name, (samples, _) in runs.items()}
    return (
        "<!doctype html><html lang=en><meta charset=utf-8>"
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ddd;padding:4px 8px;text-align:right}</style>"
        f"<h1>{html.escape(title)}</h1><p>SLO: TTFT ≤ {slo.ttft_ms:g} ms, end to end ≤ {slo.e2e_ms:g} ms. "
        "Latency is measured from each request's scheduled send time (open loop).</p>"
        + "".join(sections)
        + "<h2>End-to-end latency</h2>"
        + cdf_chart("e2e", e2e, "End-to-end latency of the answered requests, from each one's scheduled send time")
        + "<h2>Time to first token (server)</h2>"
        + cdf_chart("ttft", ttft, "Time to the first token, as the server's Server-Timing reports it")
        + "</html>"
    )
