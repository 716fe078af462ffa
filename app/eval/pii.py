"""How well `traffic export` masks personal data (app/pii/masker.py): labelled questions in both locales,
each listing the stretches that must be masked and their kind (card, iban, email, phone, name); half
of them hold none and must come out unchanged (amounts, dates, references, merchants). Two sets:
`pii_tuned.jsonl`, the rules were tuned against it (the leaks issue 34 found are in it), and
`pii_blind.jsonl`, written before the rules and never tuned against.

Each question is masked as the export masks it: with its demo bank's whole customer directory and
the regions of the bank's currency (app/demo.py, no database needed). Counted by kind:
- recall: labelled stretches masked whole (every character inside some masked span: "I'm <name>
  Rossi" leaks), whatever placeholder masked them;
- precision: masked spans that touch a labelled stretch (the rest masked something that was no
  personal data);
- over-masked: questions with nothing to mask that changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import msgspec

from app import demo
from app.domain.vocabulary import Locale
from app.pii.masker import KINDS, Kind, Masker, Span

HERE = Path(__file__).parent
SETS = {"tuned": HERE / "pii_tuned.jsonl", "blind": HERE / "pii_blind.jsonl"}
LABELLED_KINDS: tuple[Kind, ...] = ("card", "iban", "email", "phone", "name")


class Labelled(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    text: str  # every occurrence of it in the question must be masked
    kind: Kind


class LabelledQuestion(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    id: str
    tenant: str  # a demo bank's slug: its directory and currency
    locale: Locale
    question: str
    spans: list[Labelled]


class Masked(msgspec.Struct, frozen=True):
    case: LabelledQuestion
    spans: list[Span]
    text: str


class Tally(msgspec.Struct, kw_only=True):
    labelled: dict[str, int] = msgspec.field(default_factory=dict)
    found: dict[str, int] = msgspec.field(default_factory=dict)  # labelled and masked whole
    masked: dict[str, int] = msgspec.field(default_factory=dict)  # spans masked, by the kind masked as
    right: dict[str, int] = msgspec.field(default_factory=dict)  # of those, touching a labelled stretch
    clean: int = 0  # questions with nothing to mask
    changed: int = 0  # of those, changed
    misses: list[str] = msgspec.field(default_factory=list)  # "id: what leaked or was masked wrongly"

    def recall(self, kind: str) -> float:
        return self.found.get(kind, 0) / self.labelled[kind] if self.labelled.get(kind) else 1.0

    def precision(self, kind: str) -> float:
        return self.right.get(kind, 0) / self.masked[kind] if self.masked.get(kind) else 1.0

    @property
    def over_masked(self) -> float:
        return self.changed / self.clean if self.clean else 0.0


def load(name: str) -> list[LabelledQuestion]:
    lines = SETS[name].read_text(encoding="utf-8").splitlines()
    return [msgspec.json.decode(line, type=LabelledQuestion) for line in lines if line.strip()]


def demo_maskers() -> dict[str, Masker]:
    """Each demo bank's masking, as `traffic export` makes it from the seeded bank."""
    maskers = {}
    for tenant in demo.TENANTS:
        customers = demo.generate(tenant)["customers"]
        maskers[tenant.slug] = Masker([c["name"] for c in customers], [tenant.currency])
    return maskers


def mask_all(cases: Sequence[LabelledQuestion], maskers: Mapping[str, Masker]) -> list[Masked]:
    out = []
    for case in cases:
        masker = maskers[case.tenant]
        out.append(Masked(case, masker.spans(case.question, case.locale), masker.mask(case.question, case.locale)))
    return out


def _stretches(case: LabelledQuestion) -> list[tuple[int, int, Kind]]:
    found = []
    for label in case.spans:
        at = case.question.find(label.text)
        assert at >= 0, f"{case.id}: {label.text!r} is not in the question"
        while at >= 0:
            found.append((at, at + len(label.text), label.kind))
            at = case.question.find(label.text, at + 1)
    return found


def tally(results: Sequence[Masked]) -> Tally:
    t = Tally()
    for r in results:
        stretches = _stretches(r.case)
        covered = {i for s in r.spans for i in range(s.start, s.end)}
        for start, end, kind in stretches:
            t.labelled[kind] = t.labelled.get(kind, 0) + 1
            if all(i in covered for i in range(start, end)):
                t.found[kind] = t.found.get(kind, 0) + 1
            else:
                t.misses.append(f"{r.case.id}: {kind} leaked: {r.text}")
        for span in r.spans:
            t.masked[span.kind] = t.masked.get(span.kind, 0) + 1
            if any(span.start < end and start < span.end for start, end, _ in stretches):
                t.right[span.kind] = t.right.get(span.kind, 0) + 1
            else:
                t.misses.append(f"{r.case.id}: masked as {span.kind} wrongly: {r.text}")
        if not stretches:
            t.clean += 1
            t.changed += r.text != r.case.question
    return t


def markdown(results: Mapping[str, Tally]) -> str:
    """One table: each set's recall and precision by kind, and its over-masked share."""
    kinds = [k for k in KINDS if k in LABELLED_KINDS or any(t.masked.get(k) for t in results.values())]
    rows = [
        "| set | " + " | ".join(kinds) + " | over-masked |",
        "|---|" + "---|" * len(kinds) + "---|",
    ]
    for name, t in results.items():
        cells = []
        for kind in kinds:
            recall = f"{t.found.get(kind, 0)}/{t.labelled.get(kind, 0)}" if kind in LABELLED_KINDS else "-"
            cells.append(f"R {recall} ({t.recall(kind):.0%}), P {t.precision(kind):.0%}")
        rows.append(f"| {name} | " + " | ".join(cells) + f" | {t.changed}/{t.clean} ({t.over_masked:.1%}) |")
    return "\n".join(rows)
