"""The latency ladder: the same replayed traffic through cumulative configurations of the embedded engine.

    ./scripts/dev bench ladder [--duration 80] [--rate 0.5]

One traffic file (Northbridge demo accounts, the question mix, Poisson arrivals, api channel) is
replayed open-loop against `bill-assistant serve` started once per configuration:
  0  naive: FACTS-first prompt, no prefix reuse, one slot
  1  + static-first prompt with the prefix cache
  2  + parallel slots (continuous batching)
  3  + n-gram speculative decoding (llama.cpp's draft-model-free kind)
  4  + precomputed answers: measured by bench/answer_cache.py (only validated answers are cached,
     and with the small default model few validate, so a replay would mostly show steps 0-3 again)
Each configuration gets one cold request first, reported apart; the table is the warm replay.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

from app.domain.vocabulary import Locale
from app.replay.run import Sample, replay
from app.replay.traffic import Arrival, generate
from app.reports.stats import percentile
from bench.common import demo_database, service

CONFIGS = [
    ("0 naive (FACTS first, no prefix cache, 1 slot)",
     {"PROMPT_LAYOUT": "dynamic", "ENGINE_PREFIX_CACHE": "off", "ENGINE_PARALLEL": "1"}),
    ("1 + static-first prompt, prefix cache",
     {"PROMPT_LAYOUT": "static", "ENGINE_PREFIX_CACHE": "on", "ENGINE_PARALLEL": "1"}),
    ("2 + parallel slots (2)",
     {"PROMPT_LAYOUT": "static", "ENGINE_PREFIX_CACHE": "on", "ENGINE_PARALLEL": "2"}),
    ("3 + n-gram speculative decoding",
     {"PROMPT_LAYOUT": "static", "ENGINE_PREFIX_CACHE": "on", "ENGINE_PARALLEL": "2", "ENGINE_SPECULATIVE": "ngram"}),
]  # fmt: skip
COMMON = {"ENGINE": "embedded", "QUEUE_DEADLINE_SCALE": "60", "ENGINE_TIMEOUT_S": "60", "LOG_LEVEL": "WARNING"}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=80.0, help="seconds of traffic per configuration")
    parser.add_argument("--rate", type=float, default=0.5, help="mean requests per second")
    args = parser.parse_args(argv)
    with demo_database() as (url, key, refs):
        people: dict[str, list[tuple[str, Locale, str]]] = {"northbridge": [(ref, "en", "") for ref in refs]}
        # The JSON API only, as when these figures were first measured.
        arrivals = generate(
            people, rate=args.rate, duration_s=args.duration, batch_share=0.0, widget_share=0.0, seed=11
        )
        cold = Arrival(
            at=0.0,
            tenant="northbridge",
            channel="api",
            account_ref=refs[0],
            question="Why is my bill higher than last month?",
            locale="en",
        )
        rows = []
        for name, env in CONFIGS:
            with service(url, {**COMMON, **env}) as port:
                target = f"http://127.0.0.1:{port}"
                first = asyncio.run(replay([cold], target, {"northbridge": key}))[0]
                started = time.perf_counter()
                samples = asyncio.run(replay(arrivals, target, {"northbridge": key}))
                rows.append((name, first, samples, time.perf_counter() - started))
    print(f"embedded engine (SmolLM2-135M Q4_1), {len(arrivals)} requests over {args.duration:.0f} s "
          f"(Poisson, {args.rate:g}/s, question mix), {os.cpu_count()} cores; ms; cold = first request")  # fmt: skip
    print(f"{'configuration':<50} {'cold TTFT':>9} {'TTFT P50':>9} {'P99':>8} {'e2e P50':>9} {'P99':>8} "
          f"{'req/s':>6} {'x P50 e2e':>9} {'model':>6}")  # fmt: skip
    base = None
    for name, first, samples, elapsed in rows:
        ok = [s for s in samples if s.status == 200]
        ttft = [s.ttft_ms for s in ok if s.ttft_ms is not None]
        e2e = [s.e2e_ms for s in ok]
        base = base or percentile(e2e, 50)
        print(f"{name:<50} {first.ttft_ms or float('nan'):>9.0f} {percentile(ttft, 50):>9.0f} "
              f"{percentile(ttft, 99):>8.0f} {percentile(e2e, 50):>9.0f} {percentile(e2e, 99):>8.0f} "
              f"{len(ok) / elapsed:>6.2f} {base / percentile(e2e, 50):>8.1f}x {_share(ok):>6}")  # fmt: skip
    print(f"{'4 + precomputed answers':<50} see ./scripts/dev bench cache")


def _share(samples: list[Sample]) -> str:
    return f"{sum(s.source == 'model' for s in samples)}/{len(samples)}"
