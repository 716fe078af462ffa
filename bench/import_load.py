"""Bulk loads: `bill-assistant import` of CSV files, a first load and an unchanged re-load.

    ./scripts/dev bench import [--accounts 5000] [--transactions 1000000] [--json-accounts 500] [--rounds 1]

Writes a bank's export as CSV (customers, accounts, twelve monthly statements per account,
--transactions lines spread over them), then runs the real command in a child process against a
scratch database: the first load, the same files again (the last load's files with nothing written
since: answered from the load's record), the same once more with --force (loaded in full: staged,
checked and compared, nothing written), two nightly files (as many transaction lines as 1% of
the file changed and 1% added, the rest as before: anywhere in the year, then only in the last
statement period, a month-to-date file), and for comparison the JSON importer on the first
--json-accounts accounts (also as its own command).
Printed: seconds, transaction rows per second and the command's peak memory (max RSS) per run, and the
re-load's and the nightlies' time against the first load's; with --rounds, the whole sequence again on
a new database each round (the same files), and the median of each ratio.
"""

from __future__ import annotations

import argparse
import compileall
import csv
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import app
from bench.common import scratch_database

MONTHS = 12
MERCHANTS = [f"Merchant {i:03d}" for i in range(200)]


def _periods() -> list[tuple[date, date]]:
    start, spans = date(2025, 11, 1), []
    for _ in range(MONTHS):
        end = (start.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)
        spans.append((start, end))
        start = end + timedelta(days=1)
    return spans


def write_export(folder: Path, accounts: int, transactions: int, seed: int = 11) -> dict[str, Path]:
    """The CSV files of a bank with `accounts` accounts and `transactions` lines in all."""
    rng, periods = random.Random(seed), _periods()
    files = {name: folder / f"{name}.csv" for name in ("customers", "accounts", "statements", "transactions")}
    per_account = transactions // accounts
    with (
        files["customers"].open("w", newline="") as c,
        files["accounts"].open("w", newline="") as a,
        files["statements"].open("w", newline="") as s,
        files["transactions"].open("w", newline="") as t,
    ):
        cw, aw, sw, tw = csv.writer(c), csv.writer(a), csv.writer(s), csv.writer(t)
        cw.writerow(["ref", "name", "locale"])
        aw.writerow(["ref", "customer_ref", "kind", "currency", "masked_number", "opening_balance"])
        sw.writerow(["account_ref", "period_start", "period_end", "due_date", "minimum_due"])
        tw.writerow(["account_ref", "ref", "posted_on", "kind", "amount", "merchant", "category", "description"])
        for i in range(accounts):
            ref = f"ACC-{i:07d}"
            cw.writerow([f"CUS-{i:07d}", f"Customer {i}", "zh-CN" if i % 5 == 0 else "en"])
            aw.writerow([ref, f"CUS-{i:07d}", "credit_card", "EUR", f"**** {i % 10000:04d}", "0.00"])
            for start, end in periods:
                sw.writerow([ref, start, end, end + timedelta(days=25), "25.00"])
            first, days = periods[0][0], (periods[-1][1] - periods[0][0]).days + 1
            for n in range(per_account):
                day = first + timedelta(days=rng.randrange(days))
                kind = "payment" if n % 20 == 0 else "fee" if n % 97 == 0 else "purchase"
                tw.writerow([
                    ref, f"T{n}", day, kind, f"{rng.randint(100, 50000) / 100:.2f}",
                    rng.choice(MERCHANTS) if kind == "purchase" else "", "shopping" if kind == "purchase" else "",
                    "Late fee" if kind == "fee" else "",
                ])  # fmt: skip
    return files


def write_nightly(files: dict[str, Path], folder: Path, *, recent: bool, share: float = 0.01) -> dict[str, Path]:
    """The export a night after `files`: as many lines as `share` of the file changed (their amount)
    and as many new ones added; every other file, and every other line, as it was. `recent`: a
    month-to-date file, whose changed and new lines are all in the last statement period; else
    they are anywhere in the year."""
    rng, last_period = random.Random(13 + recent), _periods()[-1][0].isoformat()
    nightly = {**files, "transactions": folder / f"transactions-nightly-{'recent' if recent else 'anywhere'}.csv"}
    with files["transactions"].open(newline="") as src:  # streamed twice: the bench's memory stays small
        reader = csv.reader(src)
        next(reader)
        candidates, lines = [], 0
        for i, row in enumerate(reader):
            lines += 1
            if not recent or row[2] >= last_period:
                candidates.append(i)
    count = round(share * lines)
    changed, copied = set(rng.sample(candidates, count)), set(rng.sample(candidates, count))
    new = "M" if recent else "N"
    with files["transactions"].open(newline="") as src, nightly["transactions"].open("w", newline="") as out:
        reader, writer = csv.reader(src), csv.writer(out)
        writer.writerow(next(reader))
        added: list[list[str]] = []
        for i, row in enumerate(reader):
            if i in changed:
                row[4] = f"{rng.randint(100, 50000) / 100:.2f}"
            if i in copied:
                added.append([row[0], f"{new}{len(added)}", *row[2:]])
            writer.writerow(row)
        writer.writerows(added)
    return nightly


def write_json(files: dict[str, Path], tenant: str, accounts: int, path: Path) -> int:
    """The first `accounts` accounts of the CSV export as one JSON import file for `tenant`; its
    transaction count."""
    refs = {f"ACC-{i:07d}" for i in range(accounts)}

    def rows(name: str) -> list[dict[str, Any]]:
        with files[name].open(newline="") as f:
            return list(csv.DictReader(f))

    statements: dict[str, list[dict[str, Any]]] = {}
    for row in rows("statements"):
        if row["account_ref"] in refs:
            statements.setdefault(row.pop("account_ref"), []).append(row)
    lines: dict[str, list[dict[str, Any]]] = {}
    for row in rows("transactions"):
        if row["account_ref"] in refs:
            ref = row.pop("account_ref")
            lines.setdefault(ref, []).append({k: (v or None) for k, v in row.items()})
    customers = {c["ref"]: c for c in rows("customers")}
    doc: dict[str, Any] = {"tenant": tenant, "customers": []}
    for account in rows("accounts"):
        if account["ref"] not in refs:
            continue
        customer = customers[account.pop("customer_ref")]
        account.update(statements=statements[account["ref"]], transactions=lines.get(account["ref"], []))
        doc["customers"].append({**customer, "accounts": [account]})
    path.write_text(json.dumps(doc))
    return sum(len(v) for v in lines.values())


def _run(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """One `bill-assistant` command: its wall seconds and peak memory (MiB)."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", *args], env=env, stdout=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    out = proc.stdout.read().decode() if proc.stdout else ""
    if status != 0:
        raise SystemExit(f"bill-assistant {' '.join(args[:2])} failed ({status})")
    print("   ", out.strip(), flush=True)
    return elapsed, usage.ru_maxrss / 1024


def _round(args: argparse.Namespace, files: dict[str, Path], folder: Path) -> list[tuple[str, int, float, float]]:
    """One round on a new scratch database: (run, transactions, seconds, peak MiB) per run."""
    rows = []
    with scratch_database() as url:
        env = {**os.environ, "DATABASE_URL": url, "LOG_LEVEL": "WARNING"}
        _run(["tenants", "create", "bulk", "--name", "Bulk Bank"], env)
        csv_args = ["import", "--tenant", "bulk", *(a for name, p in files.items() for a in (f"--{name}", str(p)))]
        runs: list[tuple[str, list[str]]] = [
            ("CSV first load", []),
            ("CSV unchanged re-load", []),
            ("  the same, --force", ["--force"]),
        ]
        for label, extra in runs:
            seconds, memory = _run([*csv_args, *extra], env)
            rows.append((label, args.transactions, seconds, memory))
        nightly = files
        for label, recent in (("CSV nightly, anywhere", False), ("CSV nightly, this month", True)):
            nightly = write_nightly(nightly, folder, recent=recent)  # a night after the last load
            seconds, memory = _run(
                ["import", "--tenant", "bulk", *(a for name, p in nightly.items() for a in (f"--{name}", str(p)))], env
            )
            rows.append((label, args.transactions, seconds, memory))
        if args.json_accounts:
            _run(["tenants", "create", "bulkjson", "--name", "Bulk Bank (JSON)"], env)
            doc = folder / "export.json"
            count = write_json(files, "bulkjson", args.json_accounts, doc)
            seconds, memory = _run(["import", str(doc)], env)
            rows.append(("JSON first load", count, seconds, memory))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--accounts", type=int, default=5000)
    parser.add_argument("--transactions", type=int, default=1_000_000)
    parser.add_argument("--json-accounts", type=int, default=500, help="0: no JSON comparison")
    parser.add_argument("--rounds", type=int, default=1, help="the whole sequence again, each on a new database")
    args = parser.parse_args(argv)
    # The command as installed: pip compiles a package's modules when it installs it, where this
    # checkout (PYTHONDONTWRITEBYTECODE on some machines) would compile them again in every run.
    compileall.compile_dir(Path(app.__file__).parent, quiet=1)
    ratios: list[tuple[float, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = write_export(folder, args.accounts, args.transactions)
        for number in range(1, args.rounds + 1):
            rows = _round(args, files, folder)
            print(f"round {number}: bill-assistant import, {args.accounts:,} accounts x {MONTHS} statements,"
                  " one child process per run")  # fmt: skip
            print(f"{'run':<24} {'transactions':>12} {'seconds':>8} {'rows/s':>9} {'peak MiB':>9}")
            for label, count, seconds, memory in rows:
                print(f"{label:<24} {count:>12,} {seconds:>8.2f} {count / seconds:>9,.0f} {memory:>9.0f}")
            first = rows[0][2]
            ratios.append((rows[1][2] / first, rows[3][2] / first, rows[4][2] / first))
            print(f"unchanged re-load / first load: {ratios[-1][0]:.1%} (loaded in full: {rows[2][2] / first:.1%})")
            print(
                f"nightly (1% changed, 1% added) / first load: anywhere in the year {ratios[-1][1]:.1%},"
                f" this month only {ratios[-1][2]:.1%}"
            )
    if args.rounds > 1:
        unchanged, anywhere, recent = (statistics.median(r[k] for r in ratios) for k in range(3))
        print(
            f"median of {args.rounds} rounds / first load: unchanged re-load {unchanged:.1%}, nightly anywhere"
            f" {anywhere:.1%}, nightly this month {recent:.1%}"
        )
