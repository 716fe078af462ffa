"""Where a process's CPU goes, from a py-spy profile (`py-spy record --format raw`): each sample is
attributed to the innermost frame that belongs to a known part of the service, and the parts are
printed as shares of all samples, and as CPU milliseconds per request given the measured total.

py-spy samples a thread while it runs or waits for a core, not CPU time: where cores are fewer than
busy processes, a thread that has just woken another over loopback (a query sent to Postgres, a
request to the engine) is often preempted right there, and those samples inflate the part that
sent it. The parts are a guide to where time goes, the total (from /proc) is the CPU."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

# py-spy names each frame "function (package/module.py:line)"; the first part whose module prefix
# matches, looking from the innermost frame outwards, takes the sample.
PARTS: list[tuple[str, tuple[str, ...]]] = [
    (
        "engine client (SGLang client and its HTTP client)",
        ("app/inference/sglang.py", "app/inference/http.py", "httpx/", "httpcore/"),
    ),
    ("database (SQLAlchemy, asyncpg)", ("sqlalchemy/", "asyncpg/", "advanced_alchemy/", "app/data/")),
    ("validation and slots", ("app/domain/validation.py", "app/domain/slots.py", "app/answers/gate.py")),
    ("prompts and answers (Jinja)", ("jinja2/", "app/prompts.py", "<template>")),
    ("facts (domain)", ("app/domain/",)),
    ("JSON (msgspec)", ("msgspec/",)),
    ("logs and metrics (structlog, prometheus)", ("structlog/", "prometheus_client/", "logging/", "app/metrics.py")),
    (
        "HTTP server and framework (uvicorn, httptools, Litestar, anyio)",
        ("uvicorn/", "httptools/", "litestar/", "anyio/"),
    ),
    ("answer service and API (app)", ("app/",)),
    ("event loop (uvloop, asyncio)", ("uvloop/", "asyncio/")),
]
OTHER = "other"


def part_of(stack: list[str]) -> str:
    for frame in reversed(stack):  # innermost last in py-spy's raw format
        module = frame.rpartition(" (")[2]
        for part, prefixes in PARTS:
            if module.startswith(prefixes):
                return part
    return OTHER


def shares(raw: Path) -> Counter[str]:
    """Samples per part in a raw profile: lines of 'frame;frame;...;frame count'."""
    counts: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            counts[part_of(stack.split(";"))] += int(count)
    return counts


def table(title: str, counts: Counter[str], cpu_ms_per_request: float) -> str:
    total = sum(counts.values()) or 1
    lines = [
        f"{title}: {total} samples, {cpu_ms_per_request:.2f} ms CPU per request",
        f"{'part':<52} {'share':>6} {'ms/req':>7}",
    ]
    for part, n in counts.most_common():
        lines.append(f"{part:<52} {n / total:>6.1%} {n / total * cpu_ms_per_request:>7.2f}")
    return "\n".join(lines)
