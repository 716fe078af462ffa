"""Static-first prompts and the prefix cache, measured side by side on the embedded engine.

    ./scripts/dev bench prefix [--requests 24]

Renders the real prompt for different demo accounts and questions, and sends each one twice,
interleaved, to two engines of the same model: once as rendered (instructions and tenant policy
first, FACTS and question last) and once "dynamic-first" (the same text with FACTS and question moved
before the instructions), the way a prompt is often written first. Generation is capped at a few
tokens, so time to first token is prefill plus queueing. Prints P50/P99 time to first token, the share
of prompt tokens served from the cache, and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import uuid
from datetime import date
from decimal import Decimal
from typing import Any

from app import demo
from app.domain.facts import compute_facts
from app.domain.intents import classify
from app.domain.money import ZERO, signed
from app.domain.policy import TenantPolicy
from app.domain.records import AccountHistory, Line, Period
from app.domain.vocabulary import Locale
from app.inference.embedded import EmbeddedEngine, default_model_path
from app.inference.engine import Finished, GenerationRequest
from app.prompts import render_prompt

QUESTIONS = ["Why is my bill higher than last month?", "What is this charge?", "Why was I charged interest?",
             "Did my payment arrive?", "Why did my balance change?", "When is my payment due?"]  # fmt: skip
AS_OF = date(2026, 11, 15)


def _history(account: dict[str, Any], locale: Locale) -> AccountHistory:
    """An import-format account as the history the database would return."""
    lines = [
        Line(
            posted_on=date.fromisoformat(t["posted_on"]),
            kind=t["kind"],
            amount=Decimal(t["amount"]),
            merchant=t["merchant"],
            description=t["description"],
        )
        for t in account["transactions"]
    ]
    periods = []
    for i, s in enumerate(account["statements"]):
        start, end = date.fromisoformat(s["period_start"]), date.fromisoformat(s["period_end"])
        net = sum((signed(x.kind, x.amount) for x in lines if start <= x.posted_on <= end), ZERO)
        due, minimum = date.fromisoformat(s["due_date"]), Decimal(s["minimum_due"])
        periods.append(Period(id=i, period_start=start, period_end=end, due_date=due, minimum_due=minimum, net=net))
    return AccountHistory(
        account_id=0,
        account_ref=account["ref"],
        currency=account["currency"],
        opening_balance=Decimal(account["opening_balance"]),
        customer_ref="C",
        customer_locale=locale,
        statements=periods,
        lines=lines,
    )


def _prompts(n: int) -> list[tuple[str, str]]:
    """(static-first, dynamic-first) prompt pairs for n different accounts and questions."""
    tenant = demo.TENANTS[0]
    policy = TenantPolicy(brand=tenant.name, tone=tenant.tone)
    pairs = []
    accounts = [a for c in demo.generate(tenant, customers=n)["customers"] for a in c["accounts"]]
    for i, account in enumerate(accounts[:n]):
        facts = compute_facts(_history(account, "en"), AS_OF)
        question = QUESTIONS[i % len(QUESTIONS)]
        intent = classify(question, {e.label for e in facts.entries})
        intent = "bill_change" if intent == "out_of_scope" else intent
        rendered, dynamic = (
            render_prompt(policy=policy, intent=intent, facts=facts, question=question,
                          chat_template="chatml", layout=layout)
            for layout in ("static", "dynamic")
        )  # fmt: skip
        pairs.append((rendered.text, dynamic.text))
    return pairs


async def _ttft(engine: EmbeddedEngine, prompt: str) -> Finished:
    request = GenerationRequest(request_id=uuid.uuid4().hex, prompt=prompt, max_tokens=4)
    async for event in engine.generate(request):
        if isinstance(event, Finished):
            return event
    raise RuntimeError("no final event")


def _row(name: str, runs: list[Finished]) -> tuple[str, float, float, float, float]:
    ttfts = sorted(r.ttft_ms for r in runs)
    p99 = ttfts[min(len(ttfts) - 1, round(0.99 * len(ttfts) + 0.5) - 1)]
    cached = sum(r.cached_tokens for r in runs) / max(1, sum(r.prompt_tokens for r in runs))
    return name, statistics.median(ttfts), p99, cached, statistics.mean(r.prompt_tokens for r in runs)


async def run(requests: int) -> None:
    model = default_model_path()
    static_engine = EmbeddedEngine(model, parallel=1)
    dynamic_engine = EmbeddedEngine(model, parallel=1)
    static_runs, dynamic_runs = [], []
    pairs = _prompts(requests)
    for static, dynamic in pairs:  # interleaved, so machine noise hits both alike
        static_runs.append(await _ttft(static_engine, static))
        dynamic_runs.append(await _ttft(dynamic_engine, dynamic))
    await static_engine.close()
    await dynamic_engine.close()
    # The first request of each fills an empty cache: report it apart from the warm ones.
    print(f"embedded engine ({os.path.basename(model)}), 1 slot, {len(pairs)} different accounts and questions, "
          f"{os.cpu_count()} cores; time to first token (ms), first request (cold) excluded")  # fmt: skip
    print(f"{'prompt layout':<16} {'P50 TTFT':>9} {'P99 TTFT':>9} {'cached':>7} {'prompt tok':>11}")
    rows = [_row("dynamic-first", dynamic_runs[1:]), _row("static-first", static_runs[1:])]
    for name, p50, p99, cached, tokens in rows:
        print(f"{name:<16} {p50:>9.1f} {p99:>9.1f} {cached:>6.0%} {tokens:>11.0f}")
    print(f"static-first P50 TTFT is {rows[0][1] / rows[1][1]:.1f}x faster; cold first request: "
          f"dynamic {dynamic_runs[0].ttft_ms:.0f} ms, static {static_runs[0].ttft_ms:.0f} ms")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=24)
    asyncio.run(run(parser.parse_args(argv).requests))
