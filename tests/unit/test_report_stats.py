"""Replay's percentile math and summaries against sets whose answers are known."""

from __future__ import annotations

import random
from itertools import pairwise

from app.domain.vocabulary import Channel, Locale
from app.replay.report import Slo, html_report, summarize
from app.replay.run import Sample
from app.replay.traffic import arrival_times, dumps, generate, loads
from app.reports.stats import cdf, percentile


def test_nearest_rank_percentiles() -> None:
    values = [float(v) for v in range(1, 101)]
    random.Random(1).shuffle(values)
    assert (percentile(values, 50), percentile(values, 90), percentile(values, 99)) == (50.0, 90.0, 99.0)
    assert percentile(values, 100) == 100.0
    assert percentile([10.0, 20.0, 30.0], 50) == 20.0
    assert percentile([10.0, 20.0, 30.0], 99) == 30.0
    assert percentile([7.0], 1) == 7.0
    assert percentile([], 50) != percentile([], 50)  # NaN for no data


def test_cdf_is_monotone_and_ends_at_one() -> None:
    points = cdf([float(v) for v in range(1000)], points=50)
    assert points[-1][1] == 1.0
    assert all(a[0] <= b[0] and a[1] < b[1] for a, b in pairwise(points))
    assert len(points) <= 52


def sample(status: int, e2e: float, ttft: float | None = None, tenant: str = "a", channel: Channel = "api") -> Sample:
    return Sample(
        tenant=tenant,
        channel=channel,
        status=status,
        e2e_ms=e2e,
        ttft_ms=ttft,
        source="fallback" if status == 200 else None,
    )


def test_summary_goodput_and_errors() -> None:
    samples = [sample(200, 100, 50), sample(200, 900, 50), sample(200, 100, 900), sample(503, 5), sample(0, 5)]
    samples += [sample(200, 10, None, tenant="b", channel="batch")]
    rows = {(r.tenant, r.channel): r for r in summarize(samples, Slo(ttft_ms=500, e2e_ms=500))}
    a = rows[("a", "api")]
    assert a.requests == 5
    assert a.goodput == 1 / 5  # only the first meets both SLOs; errors never do
    assert a.errors == {"503": 1, "connection": 1}
    assert a.e2e == (100.0, 900.0, 900.0)
    assert rows[("b", "batch")].goodput == 1.0
    assert rows[("all", "all")].requests == 6
    page = html_report({"target": (samples, list(rows.values()))}, Slo(ttft_ms=500, e2e_ms=500), "t")
    assert [page.count(f'<figure class="chart" data-kind="{kind}"') for kind in ("e2e", "ttft")] == [1, 1]
    assert "<table>" in page


def test_traffic_is_deterministic_mixed_and_ordered() -> None:
    people: dict[str, list[tuple[str, Locale, str]]] = {
        "bank-a": [(f"A-{i}", "en", f"C-{i}") for i in range(30)],
        "bank-b": [(f"B-{i}", "zh-CN", f"D-{i}") for i in range(10)],
    }
    one = generate(people, rate=5, duration_s=60, seed=3)
    assert one == generate(people, rate=5, duration_s=60, seed=3)
    assert one != generate(people, rate=5, duration_s=60, seed=4)
    assert 200 < len(one) < 400
    assert [a.at for a in one] == sorted(a.at for a in one)
    assert {a.tenant for a in one} == {"bank-a", "bank-b"}
    assert {a.channel for a in one} == {"api", "batch", "widget"}
    assert all(a.customer_ref[2:] == a.account_ref[2:] for a in one)  # each account with its own customer
    assert {a.locale for a in one} == {"en", "zh-CN"}
    assert loads(dumps(one)) == one


def test_bursty_arrivals_have_the_same_mean_but_bursts() -> None:
    rng = random.Random(2)
    bursty = list(arrival_times(10, 500, "bursty", rng))
    assert 0.7 * 5000 < len(bursty) < 1.3 * 5000  # 4x for 1/5 of the time, 1/4x for 4/5: the same mean
    in_burst = sum(1 for t in bursty if int(t // 5) % 5 == 0)
    assert in_burst > 0.6 * len(bursty)  # 20% of the time holds most of the requests
