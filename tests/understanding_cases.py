"""The labelled questions of tests/data (understanding.jsonl, tuned; understanding_heldout.jsonl,
written before the rules and never tuned against; understanding_blind.jsonl, written by an independent
author without seeing the rules, measured once and then tuned against, so now tuning data too) and
their scores. Run it to print the per-intent
and per-locale accuracy and the confusion matrix (docs/understanding.md):

    .venv/bin/python -m tests.understanding_cases
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from app.domain.understanding import Context, Line, Reading, understand
from app.domain.vocabulary import INTENTS, Intent, Locale

# The intents the rules read: a policy question is recognised by the bank's library (app/eval/knowledge.py).
READ_INTENTS = [i for i in INTENTS if i != "policy"]

DATA = Path(__file__).with_name("data")
PARTS = {
    "tuned": DATA / "understanding.jsonl",
    "held-out": DATA / "understanding_heldout.jsonl",
    "blind": DATA / "understanding_blind.jsonl",  # measured blind once (docs/understanding.md), now tuned
    # Written by another author who saw neither the rules nor any case; never tuned against.
    "blind2": DATA / "understanding_blind2.jsonl",
}
STATEMENTS: dict[str, list[Line]] = {
    name: [Line(label, kind, Decimal(amount)) for label, kind, amount in rows]
    for name, rows in json.loads((DATA / "statements.json").read_text(encoding="utf-8")).items()
    if not name.startswith("_")
}
# Field -> the case key that states it; a case is checked on the fields it states.
FIELDS = {"subjects": "subj", "choices": "choices", "followup": "fu", "previous_period": "prev"}


@dataclass(frozen=True)
class Case:
    question: str
    lines: list[Line]
    context: Context | None
    locale: Locale
    intent: Intent
    expected: dict[str, Any]  # field -> value, for the fields the case states

    def read(self) -> Reading:
        return understand(self.question, self.lines, self.context)

    def misses(self, reading: Reading) -> list[str]:
        """The stated fields the reading gets wrong (subjects and choices compared as sets)."""
        wrong = []
        for field, want in self.expected.items():
            got = getattr(reading, field)
            if (set(got) if isinstance(got, tuple) else got) != (set(want) if isinstance(want, list) else want):
                wrong.append(field)
        return wrong


def load(part: str) -> list[Case]:
    cases = []
    for line in PARTS[part].read_text(encoding="utf-8").splitlines():
        raw = json.loads(line)
        context = Context(raw["ctx"][0], tuple(raw["ctx"][1]), raw["ctx"][2]) if "ctx" in raw else None
        expected = {field: raw[key] for field, key in FIELDS.items() if key in raw}
        expected |= {"language": raw.get("lang", raw["loc"]), "handover": raw.get("hand", False)}
        cases.append(Case(raw["q"], STATEMENTS[raw.get("st", "main")], context, raw["loc"], raw["intent"], expected))
    return cases


@dataclass(frozen=True)
class Score:
    right: Counter[str]  # "all", each intent and each locale -> cases whose intent is right
    total: Counter[str]
    confusion: Counter[tuple[str, str]]  # (expected, got)
    fields: dict[str, tuple[int, int]]  # field -> (right, stated)

    def accuracy(self, key: str) -> float:
        return self.right[key] / self.total[key]


def score(cases: list[Case]) -> Score:
    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    confusion: Counter[tuple[str, str]] = Counter()
    fields: dict[str, list[int]] = {}
    for case in cases:
        reading = case.read()
        for key in ("all", case.intent, case.locale):
            total[key] += 1
            right[key] += reading.intent == case.intent
        confusion[(case.intent, reading.intent)] += 1
        misses = case.misses(reading)
        for field in case.expected:
            tally = fields.setdefault(field, [0, 0])
            tally[0] += field not in misses
            tally[1] += 1
    return Score(right, total, confusion, {f: (r, n) for f, (r, n) in fields.items()})


def report(name: str, result: Score) -> str:
    keys = ["all", *READ_INTENTS, "en", "zh-CN"]
    rows = [f"### {name}", "", "| | right | cases | accuracy |", "|---|---|---|---|"]
    rows += [f"| {k} | {result.right[k]} | {result.total[k]} | {result.accuracy(k):.1%} |" for k in keys]
    rows += ["", "| expected \\ read | " + " | ".join(READ_INTENTS) + " |", "|---" * (len(READ_INTENTS) + 1) + "|"]
    rows += [f"| {e} | " + " | ".join(str(result.confusion[(e, g)]) for g in READ_INTENTS) + " |" for e in READ_INTENTS]
    rows += ["", "| field | right | stated |", "|---|---|---|"]
    rows += [f"| {f} | {r} | {n} |" for f, (r, n) in sorted(result.fields.items())]
    return "\n".join(rows)


if __name__ == "__main__":
    every = [case for part in PARTS for case in load(part)]
    for part in PARTS:
        print(report(part, score(load(part))), end="\n\n")
    print(report("all", score(every)))
