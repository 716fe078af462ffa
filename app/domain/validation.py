"""The truth contract's second line: every sentence a customer reads from a plan (the reviewed
wordings of its claims, app/answers/realize.py) is checked with its slots unfilled before it is said.
The first line is the plan check (app/domain/plan.py); these checks stay because a wording can be
edited, and they know what a slotted sentence may never do:
- every `{slot}` is one these facts offer, and no figure, date, percentage, currency, status word or
  merchant name stands outside a slot;
- the words right before a slot name the role the slot has ("the minimum payment of {outstanding}"
  fails: a role swap);
- direction words (higher/lower, 增加/减少, unchanged) agree with the sign of what they describe: the
  drivers named in the sentence, and the bill's difference when the sentence names it or no driver;
- the sentence is in the customer's language.

Status words are refused outright rather than compared with the status: the {status} slot states it,
in the facts' own words, so no paraphrase or negation ("nothing is owed", "尚未还款") can flip it.
A refused sentence is never said: the deterministic answer is served instead, with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from app.domain.claims import sign_word
from app.domain.facts import BillFacts
from app.domain.provided import Provided
from app.domain.reasons import Reason, Rule, Value, quoted
from app.domain.slots import SLOT, Role, Slot, labels, slots


class Verdict(msgspec.Struct, frozen=True):
    reason: Reason | None = None  # why the text is refused; None: it may be served

    @property
    def ok(self) -> bool:
        return self.reason is None

    @property
    def rule(self) -> Rule | None:
        return self.reason.rule if self.reason else None


OK = Verdict()


def _refuse(rule: Rule, text: str) -> Verdict:
    """Refused for what the sentence wrote (`text`, quoted as it was)."""
    return Verdict(quoted(rule, text[:120]))


# The share of a sentence's letters that are Chinese characters, at least and at most: how a locale's
# text is told from another's (its locale.json `han_share`; English at most 0.2, Chinese at least 0.4).
HanShare = tuple[float, float]
_NEVER = re.compile(r"(?!)")
# Language-neutral: what only a slot may write, and where a sentence ends, in every locale.
_FIGURE_SIGNS = r"[0-9]|[%€$¥£]"
_LINE_END = r"\n"
# The role cues (each locale's validation.json "roles"), in the order a tie between two is decided.
CUE_ROLES: dict[str, frozenset[Role]] = {
    "new_balance": frozenset({"new_balance"}),
    "previous_balance": frozenset({"previous_balance"}),
    "difference": frozenset({"difference", "change_percent", "driver"}),
    "minimum_due": frozenset({"minimum_due"}),
    "compared": frozenset({"previous_balance"}),
    "to": frozenset({"new_balance", "period"}),
    "due_date": frozenset({"due_date"}),
    "outstanding": frozenset({"outstanding"}),
}


@dataclass(frozen=True, slots=True)
class Checks:
    """The words a sentence is checked by, built from every locale's own (prompts/locales/<locale>/
    validation.json, read by app/locales.py and handed here as plain data): each pattern is the
    alternation of the locales' patterns for it, as the model may write in any of them."""

    months: re.Pattern[str]  # a date the model writes itself: its own locale's month names
    figure: re.Pattern[str]  # what only a slot may write
    # Status words are refused outright; "neutral" words contain one without claiming anything
    # (Chinese words for the minimum payment and the due date contain 还款, repayment).
    status: re.Pattern[str]
    neutral: re.Pattern[str]
    # Words that give the next slot a role; the closest one before a slot must fit it.
    cues: tuple[tuple[re.Pattern[str], frozenset[Role]], ...]
    outstanding_after: re.Pattern[str]  # a cue right after a slot: "{x} is still to pay"
    clause_end: re.Pattern[str]
    up: re.Pattern[str]
    down: re.Pattern[str]
    same: re.Pattern[str]
    # A sentence ends at . ! ? followed by a space or the end, or at a Chinese full stop, or a line break.
    sentence_end: re.Pattern[str]


def _either(patterns: Iterable[str], flags: int = 0) -> re.Pattern[str]:
    unique = [p for p in dict.fromkeys(patterns) if p]  # a copy of a locale's words adds nothing
    return re.compile("|".join(unique), flags) if unique else _NEVER


def build(parts: Mapping[str, Mapping[str, Any]], months: Sequence[str]) -> Checks:
    """The checks from every locale's decoded `validation.json`, by locale, in the locales' order;
    `months`: the model's own locale's month names (a date it writes itself is written its way)."""
    files = list(parts.values())

    def field(name: str, flags: int = 0, first: str = "", last: str = "") -> re.Pattern[str]:
        return _either([first, *(f.get(name, "") for f in files), last], flags)

    # Capitalised only: "you may" is no date.
    names = sorted({*months, *(m[:3] for m in months)}, key=len, reverse=True)
    return Checks(
        months=re.compile(r"\b(?:" + "|".join(names) + r")\b") if names else _NEVER,
        figure=field("figure", re.I, first=_FIGURE_SIGNS),
        status=field("status", re.I),
        neutral=field("neutral"),
        cues=tuple(
            (_either((f.get("roles", {}).get(cue, "") for f in files), re.I), roles) for cue, roles in CUE_ROLES.items()
        ),
        outstanding_after=field("outstanding_after", re.I),
        clause_end=field("clause_end"),
        up=field("up", re.I),
        down=field("down", re.I),
        same=field("same", re.I),
        sentence_end=field("sentence_end", last=_LINE_END),
    )


# The checks of every locale's folder, handed over by app/locales.py.
current: Provided[Checks] = Provided("checks")


_CJK = re.compile(r"[\u3400-\u9fff]")
_LATIN = re.compile(r"[A-Za-z]")


def sentence_ends(text: str) -> list[int]:
    """Where each complete sentence of `text` ends (an unfinished one at the end has none yet)."""
    ends = []
    for match in current().sentence_end.finditer(text):
        if match.group(0) in ".!?" and match.end() == len(text):
            break  # a full stop at the very end may still be "3." of "3.50", or an ellipsis: wait
        ends.append(match.end())
    return ends


def sentences(text: str) -> list[str]:
    """The sentences of a whole answer."""
    parts, start = [], 0
    for end in [*sentence_ends(text), len(text)]:
        if part := text[start:end].strip():
            parts.append(part)
        start = end
    return parts


def _language(text: str, han: HanShare) -> Verdict:
    words = SLOT.sub(" ", text)
    cjk, latin = len(_CJK.findall(words)), len(_LATIN.findall(words))
    if cjk + latin < 4:  # too short to tell ("{new_balance}.")
        return OK
    share = cjk / (cjk + latin)
    if not han[0] <= share <= han[1]:
        return Verdict(Reason(rule="wrong_language", detail="share", values={"share": f"{share:.0%}"}))
    return OK


def _outside(sentence: str) -> str:
    """The sentence with every slot blanked out (same length, so positions still match)."""
    return SLOT.sub(lambda m: " " * len(m.group(0)), sentence)


def _role_cue(before: str) -> frozenset[Role] | None:
    """The roles the closest cue in the clause before a slot allows; None without a cue."""
    checks = current()
    clause = checks.clause_end.split(before)[-1]
    best: tuple[int, frozenset[Role]] | None = None
    for pattern, roles in checks.cues:
        for match in pattern.finditer(clause):
            if best is None or match.end() > best[0]:
                best = (match.end(), roles)
    return best[1] if best else None


def _direction(sentence: str, named: list[Slot], difference_sign: int) -> Verdict:
    bare, checks = _outside(sentence), current()
    directions = ((checks.up, 1), (checks.down, -1), (checks.same, 0))
    claimed = {sign for pattern, sign in directions if pattern.search(bare)}
    if not claimed:
        return OK
    if len(claimed) > 1:
        return _refuse("wrong_direction", sentence)
    (sign,) = claimed
    drivers = [slot for slot in named if slot.role == "driver"]
    for slot in drivers:
        if slot.sign != sign:
            values: dict[str, Value] = {
                "slot": f"{{{slot.name}}}",
                "went": sign_word(slot.sign),
                "claimed": sign_word(sign),
            }
            return Verdict(Reason(rule="wrong_driver", detail="slot_went", values=values))
    # The bill's own change: what the direction is about when no driver is named, or when the
    # sentence names the difference itself ("{difference} more, because of {driver_1}").
    about_the_bill = not drivers or any(slot.role in ("difference", "change_percent") for slot in named)
    if about_the_bill and difference_sign != sign:
        bill: dict[str, Value] = {"went": sign_word(difference_sign), "claimed": sign_word(sign)}
        return Verdict(Reason(rule="wrong_direction", detail="sentence_went", values=bill))
    return OK


@dataclass(frozen=True, slots=True)
class Contract:
    """What one answer's sentences are checked against, worked out once from its facts."""

    slots: dict[str, Slot]
    labels: dict[str, str]  # third-party names that only a slot may write, by their lower case
    difference_sign: int
    # The verdicts given so far, by sentence and locale: the whole answer's check repeats the
    # sentences the stream's gate has already passed.
    checked: dict[tuple[str, HanShare], Verdict] = field(default_factory=dict)

    @classmethod
    def of(cls, facts: BillFacts, offered: dict[str, Slot] | None = None) -> Contract:
        """`offered`: these facts' slots, when the caller has already worked them out."""
        sign = (facts.difference > 0) - (facts.difference < 0)
        return cls(
            slots=offered if offered is not None else slots(facts),
            labels={name.lower(): name for name in labels(facts)},
            difference_sign=sign,
        )


def check_sentence(sentence: str, contract: Contract, han: HanShare) -> Verdict:
    """One sentence of the model's answer, with its slots still unfilled, in a locale whose sentences'
    letters are Chinese characters in the share `han` (its locale.json `han_share`)."""
    verdict = contract.checked.get((sentence, han))
    if verdict is None:
        verdict = contract.checked[sentence, han] = _check_sentence(sentence, contract, han)
    return verdict


def _check_sentence(sentence: str, contract: Contract, han: HanShare) -> Verdict:
    if not (verdict := _language(sentence, han)).ok:
        return verdict
    checks = current()
    named: list[Slot] = []
    for match in SLOT.finditer(sentence):
        slot = contract.slots.get(match.group(1))
        if slot is None:
            return _refuse("unknown_slot", match.group(0))
        cue = _role_cue(sentence[: match.start()])
        if cue is None and checks.outstanding_after.match(sentence, match.end()):
            cue = frozenset({"outstanding"})
        if cue is not None and slot.role not in cue and slot.kind != "label":
            return _refuse("role_mismatch", f"{sentence[max(0, match.start() - 40) : match.end()]}")
        named.append(slot)
    bare = _outside(sentence)
    if "{" in bare or "}" in bare:
        return _refuse("unknown_slot", bare.strip())
    if figure := checks.figure.search(bare) or checks.months.search(bare):
        return _refuse("unslotted_figure", figure.group(0))
    if status := checks.status.search(checks.neutral.sub(" ", bare)):
        return _refuse("status_claim", status.group(0))
    lowered = bare.lower()
    for lower, label in contract.labels.items():
        if lower in lowered:
            return _refuse("unslotted_label", label)
    return _direction(sentence, named, contract.difference_sign)
