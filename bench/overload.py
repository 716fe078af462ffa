"""Overload on the path without the engine: what is admitted stays fast, the excess is refused at once.

    ./scripts/dev bench overload [--capacity 250] [--duration 8] [--multiples 1,2,4] [--guard on|off]

Like bench/explain_load.py (ENGINE=off, a scratch demo database, `bill-assistant serve` in its own
process, open-loop Poisson on POST /v1/explanations), it first finds the capacity, unless given
with --capacity: a short ramp (--ramp rates, 4 s each) up to the last rate whose P99 is under
25 ms with nothing refused. Then it offers 1x, 2x and 4x that rate for --duration seconds each and
prints one table: offered and achieved (answered 200) requests/s, P50/P99 of the answered ones,
the share refused (503) and how fast the refusals came, and errors other than 503.
`--guard off` runs the same with the overload guard disabled (MAX_IN_FLIGHT=1000000,
MAX_LOOP_LAG_MS=0), for comparison.
"""

from __future__ import annotations

import argparse
import os

import uvloop

from app.reports.stats import percentile
from bench.common import demo_database, service
from bench.explain_load import explanation_requests
from bench.loadgen import Result, open_loop

RAMP_P99_MS = 25.0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--capacity", type=float, default=None, help="requests/s; default: found by a ramp")
    parser.add_argument("--ramp", default="100,150,200,250,300,350,400", help="rates tried to find the capacity")
    parser.add_argument("--duration", type=float, default=8.0, help="seconds per multiple")
    parser.add_argument("--multiples", default="1,2,4", help="multiples of the capacity, comma-separated")
    parser.add_argument("--guard", choices=("on", "off"), default="on")
    args = parser.parse_args(argv)

    env = {"ENGINE": "off"}
    if args.guard == "off":
        env |= {"MAX_IN_FLIGHT": "1000000", "MAX_LOOP_LAG_MS": "0"}
    with demo_database() as (url, key, refs), service(url, env) as port:
        make_request = explanation_requests(port, key, refs)

        def run(rate: float, duration_s: float) -> Result:
            return uvloop.run(open_loop("127.0.0.1", port, rate, duration_s, make_request))

        run(100, 3)  # warm-up
        capacity = args.capacity
        if capacity is None:
            for rate in (float(r) for r in args.ramp.split(",")):
                r = run(rate, 4)
                fine = r.percentile(99) < RAMP_P99_MS and not r.errors
                print(f"ramp {rate:.0f}/s: P99 {r.percentile(99):.1f} ms, errors {r.errors}")
                if not fine:
                    break
                capacity = rate
            if capacity is None:
                raise SystemExit("no rate in the ramp met P99 < 25 ms")
        print(f"POST /v1/explanations, ENGINE=off, guard {args.guard}, capacity {capacity:.0f}/s, "
              f"{args.duration:.0f} s each, {os.cpu_count()} cores, server and load on one machine")  # fmt: skip
        columns = ("multiple", "offered/s", "achieved/s", "P50 ms", "P99 ms", "shed %", "503 P50 ms", "other err")
        print(" ".join(f"{c:>10}" for c in columns))
        for multiple in (float(m) for m in args.multiples.split(",")):
            rate = capacity * multiple
            r = run(rate, args.duration)
            shed = r.errors.get("503", 0)
            total = len(r.latencies_ms) + sum(r.errors.values())
            other = {k: v for k, v in r.errors.items() if k != "503"}
            print(f"{multiple:>9.0f}x {rate:>10.0f} {r.throughput:>10.1f} {r.percentile(50):>10.2f} "
                  f"{r.percentile(99):>10.2f} {100 * shed / total:>10.1f} "
                  f"{percentile(r.shed_ms, 50) if r.shed_ms else float('nan'):>10.2f} "
                  f"{sum(other.values()):>10}" + (f"  {other}" if other else ""))  # fmt: skip
