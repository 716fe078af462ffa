"""The reports' charts, drawn with matplotlib (3.11, the `reports` extra in pyproject.toml) as inline SVG.

Why matplotlib: it is maintained, draws axes, ticks, units and legends properly, and renders on the
server to static SVG, so a report stays one self-contained HTML file that opens offline, with no
JavaScript or CDN, and can be archived with the sign-off of an engine change. (Plotly and Bokeh
would ship a megabyte of JavaScript into each report.) Text stays text (`svg.fonttype` none), and
ids are salted per chart, so two charts on one page never share an element id.

matplotlib is not the service's: it is imported when a chart is drawn, so the service, the gates and
the text reports run without it, and an HTML report without it says how to get it.
"""

from __future__ import annotations

import html
import io
import math
from collections.abc import Mapping, Sequence
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING

import click

from app.reports.stats import cdf

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PERCENTILES = (0.5, 0.9, 0.99)
MISSING = "an HTML report's charts need matplotlib (not the service's): pip install 'bill-assistant[reports]'"


class ChartsUnavailable(click.ClickException):
    """matplotlib is not installed (the `reports` extra): the command ends with MISSING, no traceback."""


def _matplotlib() -> ModuleType:
    try:
        matplotlib = import_module("matplotlib")
    except ImportError as exc:
        raise ChartsUnavailable(MISSING) from exc
    matplotlib.rcParams.update({"svg.fonttype": "none", "font.size": 9, "axes.grid": True, "grid.alpha": 0.3})
    return matplotlib


def _figure(width: float, height: float) -> Figure:
    _matplotlib()
    from matplotlib.figure import Figure  # drawn without pyplot: no display, no global figure state

    return Figure(figsize=(width, height))


def _svg(figure: Figure, kind: str, caption: str) -> str:
    _matplotlib().rcParams["svg.hashsalt"] = kind  # stable, distinct ids per chart
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight")
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg") :]  # the XML prolog and doctype do not belong inside HTML
    return (
        f'<figure class="chart" data-kind="{html.escape(kind)}" role="img" aria-label="{html.escape(caption)}">'
        f"{svg}<figcaption>{html.escape(caption)}</figcaption></figure>"
    )


def cdf_chart(kind: str, series: Mapping[str, Sequence[float]], caption: str) -> str:
    """Latency CDFs (ms, log scale) of each named series, with the P50/P90/P99 lines marked."""
    figure = _figure(7.5, 3.6)
    axes = figure.add_subplot()
    drawn = 0
    for name, values in series.items():
        points = cdf([v for v in values if v > 0])  # at most 200 steps: a small SVG for any run
        if not points:
            continue
        axes.step([v for v, _ in points], [p for _, p in points], where="post", label=f"{name} ({len(values)})")
        drawn += 1
    if not drawn:
        return f"<p>{html.escape(caption)}: no successful requests</p>"
    from matplotlib.ticker import FuncFormatter, PercentFormatter  # _figure has checked it is there

    axes.set_xscale("log")
    axes.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axes.set_xlabel("latency (ms, log scale)")
    axes.set_ylabel("share of requests")
    axes.yaxis.set_major_formatter(PercentFormatter(1.0))
    axes.set_ylim(0, 1.02)
    for p in PERCENTILES:
        axes.axhline(p, color="0.6", linewidth=0.6, linestyle="--")
        axes.annotate(
            f"P{p * 100:g}",
            (1.0, p),
            xycoords=axes.get_yaxis_transform(),
            xytext=(3, 0),
            textcoords="offset points",
            va="center",
            fontsize=8,
        )
    axes.legend(loc="lower right", title="run (requests)")
    return _svg(figure, kind, caption)


def bar_chart(kind: str, shares: dict[str, float], caption: str) -> str:
    """One horizontal bar per name: a share (0..1), labelled with its value."""
    figure = _figure(6.5, 0.5 + 0.45 * max(len(shares), 1))
    from matplotlib.ticker import PercentFormatter

    axes = figure.add_subplot()
    names = list(shares)
    bars = axes.barh(names, [shares[n] for n in names], color=[f"C{i}" for i in range(len(names))])
    axes.bar_label(bars, labels=[f"{shares[n]:.1%}" for n in names], padding=3)
    axes.invert_yaxis()  # the first profile on top
    top = max(shares.values(), default=0.0)
    axes.set_xlim(0, max(0.05, math.ceil(top * 1.25 * 20) / 20))
    axes.xaxis.set_major_formatter(PercentFormatter(1.0))
    axes.set_xlabel("share of cases")
    return _svg(figure, kind, caption)
