"""Retrieval from a bank's help-centre library as it grows: the demo library (60 articles, about 170
passages) against the same bank grown to 10,000 passages, side by side in one run.

    ./scripts/dev bench knowledge [--passages 10000] [--rounds 3]

A scratch database holds two tenants: one with Northbridge's demo library, one with it plus generated
articles (each three paragraphs drawn from the demo articles of its locale, under a numbered title, so
every query word still matches thousands of passages: the search's worst case) up to --passages
passages in each locale. Each labelled policy question (app/eval/knowledge_questions.jsonl) is asked of
both tenants in turn, --rounds times, as the service asks (app/data/knowledge_search.py `search` and
`Found.fitting`, one round trip on an asyncpg connection). Printed: P50/P99 ms per library size and
locale, the large library's P99 against the small one's, and how long loading the generated articles took.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time

import asyncpg

from app import demo
from app.data.connecting import asyncpg_dsn
from app.data.database import create_engine
from app.data.knowledge import import_library
from app.data.knowledge_search import search
from app.data.tenants import create_tenant
from app.domain.knowledge import ArticleIn, parse_library, passages
from app.eval.knowledge import load
from bench.common import scratch_database

GOAL_P99_MS = 20.0


def grown(articles: list[ArticleIn], total: int, rng: random.Random) -> list[ArticleIn]:
    """The library plus generated articles, until each locale holds `total` passages."""
    out = list(articles)
    for locale in ("en", "zh-CN"):
        own = [a for a in articles if a.locale == locale]
        paragraphs = [p for a in own for p in passages(a.body)]
        count = sum(len(passages(a.body)) for a in own)
        n = 0
        while count < total:
            n += 1
            base = rng.choice(own)
            body = "\n\n".join(rng.sample(paragraphs, 3))
            out.append(ArticleIn(id=f"{base.id}-{n}", locale=locale, title=f"{base.title} {n}", body=body))
            count += 3
    return out


async def timed(conn: asyncpg.Connection, tenant: int, locale: str, question: str) -> float:
    start = time.perf_counter()
    (await search(conn, tenant, locale, question)).fitting()
    return (time.perf_counter() - start) * 1000


async def run(url: str, total: int, rounds: int) -> None:
    tenant = demo.TENANTS[0]
    library = parse_library(demo.library(tenant))
    engine = create_engine(url)
    ids: dict[str, int] = {}
    async with engine.begin() as conn:
        for name in ("small", "large"):
            ids[name] = await create_tenant(conn, f"{tenant.slug}-{name}", tenant.name, tenant.priority_class)
            await import_library(conn, ids[name], library)
    bigger = grown(library, total, random.Random(7))[len(library) :]
    start = time.perf_counter()
    async with engine.begin() as conn:
        await import_library(conn, ids["large"], bigger)
    load_s = time.perf_counter() - start
    await engine.dispose()
    questions = load("tuned")
    conn = await asyncpg.connect(asyncpg_dsn(url))
    try:
        await conn.execute("ANALYZE")
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(rounds):
            for q in questions:
                for name, tenant_id in ids.items():  # in turn: the machine's noise falls on both alike
                    times.setdefault((name, q.locale), []).append(await timed(conn, tenant_id, q.locale, q.question))
    finally:
        await conn.close()
    print(f"loaded {len(bigger)} generated articles ({total} passages per locale) in {load_s:.1f} s")
    print(f"{'library':<8} {'locale':<6} {'n':>5} {'P50 ms':>8} {'P99 ms':>8}")
    p99: dict[tuple[str, str], float] = {}
    for (name, locale), ms in sorted(times.items()):
        p99[(name, locale)] = statistics.quantiles(ms, n=100)[98]
        print(f"{name:<8} {locale:<6} {len(ms):>5} {statistics.median(ms):>8.2f} {p99[(name, locale)]:>8.2f}")
    for locale in ("en", "zh-CN"):
        ratio = p99[("large", locale)] / p99[("small", locale)]
        verdict = "within" if p99[("large", locale)] <= GOAL_P99_MS else "OVER"
        goal = f"{verdict} the {GOAL_P99_MS:.0f} ms goal"
        print(f"{locale}: P99 at {total} passages is {ratio:.1f}x the demo library's; {goal}")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="bench knowledge", description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=10_000, help="passages per locale in the large library")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    with scratch_database() as url:
        asyncio.run(run(url, args.passages, args.rounds))
