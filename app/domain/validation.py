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
from dataclasses import dataclass, field

import msgspec

from app.domain.facts import BillFacts
from app.domain.reasons import Reason, Rule
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


def _refuse(rule: Rule, detail: str = "") -> Verdict:
    return Verdict(Reason(rule=rule, detail=detail[:120]))


_I = re.I
# The share of a sentence's letters that are Chinese characters, at least and at most: how a locale's
# text is told from another's (its locale.json `han_share`; English at most 0.2, Chinese at least 0.4).
HanShare = tuple[float, float]
# The model writes English (its claims are said in the customer's language by the service), so a
# date it writes itself is an English one.
MONTHS_EN = (
    *("January", "February", "March", "April", "May", "June"),
    *("July", "August", "September", "October", "November", "December"),
)
# Capitalised only: "you may" is no date.
_MONTHS = re.compile(
    r"\b(?:" + "|".join(sorted({*MONTHS_EN, *(m[:3] for m in MONTHS_EN)}, key=len, reverse=True)) + r")\b"
)
_CJK_NUMBER = "[零〇一二两三四五六七八九十百千万亿]"
# What only a slot may write.
_FIGURE = re.compile(
    r"[0-9０-９]|[%％€$¥£￥]|\b(?:EUR|USD|CNY|RMB|GBP|HKD|JPY|euros?|dollars?|yuan|percent|per\s+cent)\b|百分之"
    rf"|元|块钱|{_CJK_NUMBER}+\s*(?:元|块|月|日|号|年|%|％)"
    r"|\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred|"
    r"thousand)\s+(?:euros?|dollars?|yuan|percent)\b",
    _I,
)
_STATUS_WORDS = re.compile(
    r"\b(?:paid|unpaid|repaid|prepaid|paying|settled?|clear(?:ed)?|overdue|late|missed|arrived?|arrives|received?|"
    r"credited|owe[ds]?|owing|in\s+full|fully|partial(?:ly)?|past\s+due|failed|declined|rejected|bounced|reversed|"
    r"cancell?ed|delayed|processed|complete[ds]?|confirmed|successful(?:ly)?|went\s+through|on\s+time|up\s+to\s+date|"
    r"all\s+set|(?:need|needs|have|has|must|should|please)\s+(?:to\s+)?pay|nothing\s+(?:is\s+)?(?:due|owed|left|"
    r"outstanding|to\s+pay)|no\s+(?:balance|amount|payment)|(?:balance|bill|statement)\s+(?:is|has\s+been)\s+zero|zero\s+balance)\b"
    r"|(?<!minimum )\bpayments?\s+(?:is|was|has|have|went)\b"
    r"|还款|还清|还完|还上|结清|付清|付款|付过|付了|已付|未付|支付|缴|逾期|过期|到账|收到|欠|全额|部分|无需|不需要|不必|不用|"
    r"已还|未还|没还|还了|失败|被拒|拒绝|退回|延迟|为零|清零|完成|成功",
    _I,
)
# Chinese words for the minimum payment and the due date contain 还款 (repayment) without claiming anything.
_NEUTRAL = re.compile(r"最低还款额?|还款日期?|还款截止日?|还款状态")
# Words that give the next slot a role; the closest one before a slot must fit it.
_ROLE_CUES: list[tuple[re.Pattern[str], frozenset[Role]]] = [
    (
        re.compile(
            r"\bnew\s+balance\b|\bcurrent\s+balance\b|\bstatement\s+balance\b|\bbill\s+(?:totals?|comes\s+to|"
            r"amount)\b|\bthis\s+month'?s?\s+(?:bill|balance|statement)\b|本期账单金额|本期余额|新余额|账单金额|"
            r"本期应还|当前余额",
            _I,
        ),
        frozenset({"new_balance"}),
    ),
    (
        re.compile(
            r"\bprevious\s+(?:balance|statement|bill)\b|\blast\s+(?:month|statement)'?s?\b|\bopening\s+balance\b"
            r"|上期|上个月|上月",
            _I,
        ),
        frozenset({"previous_balance"}),
    ),
    (
        re.compile(
            r"\b(?:went|gone|go)\s+(?:up|down)\s+by\b|\b(?:higher|lower|more|less|increased?|decreased?|rose|"
            r"fell|dropped|changed?|up|down)\s+by\b|\bdifference\s+(?:is|of)\b|\bchange\s+(?:is|of)\b|差额|"
            r"(?:增加|减少|上涨|下降|增长|上升|降低|多|少|变化)了?",
            _I,
        ),
        frozenset({"difference", "change_percent", "driver"}),
    ),
    (re.compile(r"\bminimum\s+(?:payment|amount|due)?|最低还款(?:额)?", _I), frozenset({"minimum_due"})),
    (re.compile(r"\bcompared\s+(?:to|with)\b|\bthan\b", _I), frozenset({"previous_balance"})),
    (re.compile(r"\bto\b|至|到", _I), frozenset({"new_balance", "period"})),
    (
        re.compile(r"\bdue\s+(?:on|by|date)\b|\bdeadline\b|\bpay\s+(?:it\s+)?by\b|到期日?|还款日|截止", _I),
        frozenset({"due_date"}),
    ),
    (
        re.compile(r"\bstill\s+to\s+pay\b|\bleft\s+to\s+pay\b|\bremaining\b|\boutstanding\b|待还|剩余|仍需|还需", _I),
        frozenset({"outstanding"}),
    ),
]
# A cue right after a slot: "{x} is still to pay" makes x the outstanding amount.
_OUTSTANDING_AFTER = re.compile(r"\s*(?:is\s+|are\s+)?(?:still\s+to\s+pay|left\s+to\s+pay|remaining|outstanding)\b", _I)
_CLAUSE_END = re.compile(r"[,;:，；：、（）()—]|\band\b|\bbut\b|\bwhile\b|\bwhich\b|和|但|并且|其中")
_UP = re.compile(
    r"\b(?:higher|increased?|increases|increasing|went\s+up|gone\s+up|rose|risen|grew|grown|up\s+by|larger|bigger)\b"
    r"|\bmore\s+than\b|增加|上涨|上升|增长|多了|多出|高于|提高",
    _I,
)
_DOWN = re.compile(
    r"\b(?:lower|decreased?|decreases|decreasing|went\s+down|gone\s+down|fell|fallen|dropped|down\s+by|smaller|"
    r"reduced|reduction)\b|\bless\s+than\b|减少|下降|下跌|少了|低于|降低",
    _I,
)
_SAME = re.compile(
    r"\b(?:unchanged|the\s+same|no\s+change|did\s+not\s+change|didn'?t\s+change|stayed)\b|不变|没有变化|持平|相同|一样",
    _I,
)
_CJK = re.compile(r"[\u3400-\u9fff]")
_LATIN = re.compile(r"[A-Za-z]")
# A sentence ends at . ! ? followed by a space or the end, or at a Chinese full stop, or a line break.
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|[。！？]|\n")


def sentence_ends(text: str) -> list[int]:
    """Where each complete sentence of `text` ends (an unfinished one at the end has none yet)."""
    ends = []
    for match in _SENTENCE_END.finditer(text):
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
        return _refuse("wrong_language", f"{share:.2f}")
    return OK


def _outside(sentence: str) -> str:
    """The sentence with every slot blanked out (same length, so positions still match)."""
    return SLOT.sub(lambda m: " " * len(m.group(0)), sentence)


def _role_cue(before: str) -> frozenset[Role] | None:
    """The roles the closest cue in the clause before a slot allows; None without a cue."""
    clause = _CLAUSE_END.split(before)[-1]
    best: tuple[int, frozenset[Role]] | None = None
    for pattern, roles in _ROLE_CUES:
        for match in pattern.finditer(clause):
            if best is None or match.end() > best[0]:
                best = (match.end(), roles)
    return best[1] if best else None


def _direction(sentence: str, named: list[Slot], difference_sign: int) -> Verdict:
    bare = _outside(sentence)
    claimed = {sign for pattern, sign in ((_UP, 1), (_DOWN, -1), (_SAME, 0)) if pattern.search(bare)}
    if not claimed:
        return OK
    if len(claimed) > 1:
        return _refuse("wrong_direction", sentence)
    (sign,) = claimed
    drivers = [slot for slot in named if slot.role == "driver"]
    for slot in drivers:
        if slot.sign != sign:
            return _refuse("wrong_driver", f"{{{slot.name}}} moved {slot.sign:+d}, the sentence says {sign:+d}")
    # The bill's own change: what the direction is about when no driver is named, or when the
    # sentence names the difference itself ("{difference} more, because of {driver_1}").
    about_the_bill = not drivers or any(slot.role in ("difference", "change_percent") for slot in named)
    if about_the_bill and difference_sign != sign:
        return _refuse("wrong_direction", f"the bill moved {difference_sign:+d}, the sentence says {sign:+d}")
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
    named: list[Slot] = []
    for match in SLOT.finditer(sentence):
        slot = contract.slots.get(match.group(1))
        if slot is None:
            return _refuse("unknown_slot", match.group(0))
        cue = _role_cue(sentence[: match.start()])
        if cue is None and _OUTSTANDING_AFTER.match(sentence, match.end()):
            cue = frozenset({"outstanding"})
        if cue is not None and slot.role not in cue and slot.kind != "label":
            return _refuse("role_mismatch", f"{sentence[max(0, match.start() - 40) : match.end()]}")
        named.append(slot)
    bare = _outside(sentence)
    if "{" in bare or "}" in bare:
        return _refuse("unknown_slot", bare.strip())
    if figure := _FIGURE.search(bare) or _MONTHS.search(bare):
        return _refuse("unslotted_figure", figure.group(0))
    if status := _STATUS_WORDS.search(_NEUTRAL.sub(" ", bare)):
        return _refuse("status_claim", status.group(0))
    lowered = bare.lower()
    for lower, label in contract.labels.items():
        if lower in lowered:
            return _refuse("unslotted_label", label)
    return _direction(sentence, named, contract.difference_sign)
