"""What the model may say: a plan, an ordered list of typed claims from a closed set.

The model never writes the customer's text. It picks claims ("the change, up"; "driver 2, down";
"the payment status: unpaid") under a JSON schema enforced while decoding; each claim's arguments
are checked here against the facts, and the service says the accepted claims in reviewed wordings
(prompts/claims.<locale>.j2), filled from the facts. There is no way to write a figure, a date, a
merchant or a bank action: the set of things that can be said is closed, so no paraphrase can
contradict the facts (DESIGN.md, rule 2).

Each intent names its lead claim (what answers the question, said first) and the claims that fit it;
a plan that fails a check, or misses its lead, is refused with a typed reason and never cached.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any, Literal, get_args

import msgspec

from app.domain.facts import BillFacts, PaymentStatus
from app.domain.reasons import Reason
from app.domain.slots import MAX_DRIVERS, items
from app.domain.vocabulary import Intent

MAX_CLAIMS = 5
WORDINGS = 2  # every claim type has this many reviewed wordings per locale

Direction = Literal["up", "down", "same"]
DriverDirection = Literal["up", "down"]
Action = Literal["pay", "agent"]


class Claim(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True, tag_field="claim"
):
    wording: Literal[1, 2] = 1  # which reviewed wording says it


class NewBalance(Claim, frozen=True, tag="new_balance"):
    pass


class Change(Claim, frozen=True, tag="change"):
    direction: Direction  # must be the sign of the bill's difference


class DriverClaim(Claim, frozen=True, tag="driver"):
    n: int  # the driver's number in FACTS (largest first)
    direction: DriverDirection  # must be the sign of that driver's amount


class Transaction(Claim, frozen=True, tag="transaction"):
    n: int  # the transaction's number in FACTS


class FeesInterest(Claim, frozen=True, tag="fees_interest"):
    pass


class PaymentStatusClaim(Claim, frozen=True, tag="payment_status"):
    status: PaymentStatus  # must be the facts' status


class PaidSinceClose(Claim, frozen=True, tag="paid_since_close"):
    pass


class StillToPay(Claim, frozen=True, tag="still_to_pay"):
    pass


class MinimumDue(Claim, frozen=True, tag="minimum_due"):
    pass


class PeriodClaim(Claim, frozen=True, tag="period"):
    pass


class NextStep(Claim, frozen=True, tag="next_step"):
    action: Action


class NoAnswer(Claim, frozen=True, tag="no_answer"):
    pass


AnyClaim = (
    NewBalance | Change | DriverClaim | Transaction | FeesInterest | PaymentStatusClaim | PaidSinceClose
    | StillToPay | MinimumDue | PeriodClaim | NextStep | NoAnswer
)  # fmt: skip
CLAIM_TYPES: dict[str, type[Claim]] = {str(cls.__struct_config__.tag): cls for cls in get_args(AnyClaim)}


class Plan(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    claims: list[AnyClaim]


# What answers each intent (said first), and what else fits it. Out-of-scope questions never reach
# the model. The lead is one of a set: a charge question is answered by a transaction, or by saying
# the statement does not show it.
LEAD: dict[Intent, frozenset[str]] = {
    "bill_change": frozenset({"change"}),
    "charge": frozenset({"transaction", "no_answer"}),
    "fees_interest": frozenset({"fees_interest"}),
    "payment": frozenset({"payment_status"}),
}
FITS: dict[Intent, frozenset[str]] = {
    "bill_change": frozenset(
        {"change", "driver", "new_balance", "period", "payment_status", "still_to_pay", "minimum_due",
         "fees_interest", "next_step"}
    ),
    "charge": frozenset({"transaction", "driver", "new_balance", "period", "next_step", "no_answer"}),
    "fees_interest": frozenset({"fees_interest", "transaction", "new_balance", "period", "next_step"}),
    "payment": frozenset(
        {"payment_status", "paid_since_close", "still_to_pay", "minimum_due", "new_balance", "period", "next_step"}
    ),
}  # fmt: skip
# A claim whose content an earlier one already said is left out ("nothing is said twice").
COVERED_BY: dict[str, frozenset[str]] = {"new_balance": frozenset({"change"})}


def kind_of(claim: Claim) -> str:
    """The claim's type, as the model writes it ("driver")."""
    return str(claim.__struct_config__.tag)


def sign_word(amount: Any) -> Direction:
    return "up" if amount > 0 else "down" if amount < 0 else "same"


def fee_items(facts: BillFacts) -> list[int]:
    """The numbers (1-based, as in FACTS) of the statement's fee and interest transactions."""
    return [i for i, e in enumerate(items(facts), start=1) if e.kind in ("fee", "interest")]


class PlanCheck:
    """Checks one plan's claims as they arrive, against one answer's facts, intent and question.

    `check` gives each claim's verdict on its own (arguments against the facts, fit with the intent,
    applicability); `missing` says, once the plan has ended, what its intent needed and never got."""

    def __init__(self, facts: BillFacts, intent: Intent, focus: Iterable[str] = ()) -> None:
        self.facts, self.intent = facts, intent
        self.items = items(facts)
        # The transactions the question names: a charge answer must be about one of them.
        wanted = {label.lower() for label in focus}
        self.focus = {i for i, e in enumerate(self.items, start=1) if e.label.lower() in wanted}
        self.seen: list[Claim] = []

    def check(self, claim: Claim) -> Reason | None:
        kind = kind_of(claim)
        facts, status = self.facts, self.facts.payment.status
        if len(self.seen) == MAX_CLAIMS:
            return Reason(rule="invalid_plan", detail=f"more than {MAX_CLAIMS} claims")
        if kind not in FITS[self.intent]:
            return Reason(rule="off_intent", detail=f"{kind} for {self.intent}")
        if isinstance(claim, Change) and claim.direction != sign_word(facts.difference):
            return Reason(
                rule="wrong_direction", detail=f"{claim.direction}, the bill went {sign_word(facts.difference)}"
            )
        if isinstance(claim, DriverClaim):
            if not 1 <= claim.n <= min(len(facts.drivers), MAX_DRIVERS):
                return Reason(rule="unknown_index", detail=f"driver {claim.n}")
            actual = sign_word(facts.drivers[claim.n - 1].amount)
            if claim.direction != actual:
                return Reason(rule="wrong_driver", detail=f"driver {claim.n} went {actual}, not {claim.direction}")
        if isinstance(claim, Transaction):
            if not 1 <= claim.n <= len(self.items):
                return Reason(rule="unknown_index", detail=f"transaction {claim.n}")
            if self.focus and claim.n not in self.focus:
                return Reason(rule="wrong_subject", detail=f"transaction {claim.n} is not the one asked about")
            if self.intent == "fees_interest" and claim.n not in fee_items(facts):
                return Reason(rule="wrong_subject", detail=f"transaction {claim.n} is no fee or interest")
        if isinstance(claim, PaymentStatusClaim) and claim.status != status:
            return Reason(rule="status_claim", detail=f"{claim.status}, the facts say {status}")
        if isinstance(claim, NoAnswer) and (self.focus or any(not isinstance(c, NextStep) for c in self.seen)):
            return Reason(rule="wrong_subject", detail="no_answer, but the facts answer it")
        if self.seen and isinstance(self.seen[0], NoAnswer) and not isinstance(claim, NextStep):
            return Reason(rule="wrong_subject", detail=f"{kind} after no_answer")
        pay = isinstance(claim, StillToPay | MinimumDue) or (isinstance(claim, NextStep) and claim.action == "pay")
        if status == "paid" and pay:
            return Reason(rule="not_applicable", detail=f"{kind}: the statement is paid in full")
        self.seen.append(claim)
        return None

    def missing(self) -> Reason | None:
        """What the plan lacks to be said: any claim at all, its intent's lead, a bill change's cause."""
        kinds = {kind_of(c) for c in self.seen}
        if not self.seen:
            return Reason(rule="empty")
        if not kinds & LEAD[self.intent]:
            return Reason(rule="missing_claim", detail="/".join(sorted(LEAD[self.intent])))
        if self.intent == "bill_change" and self.facts.difference != 0 and self.facts.drivers and "driver" not in kinds:
            return Reason(rule="missing_claim", detail="driver")
        return None

    def ready(self) -> bool:
        """Whether the claims accepted so far may be said: nothing is said before the plan holds what
        its intent needs, so a plan that ends without it has shown nothing."""
        return self.missing() is None


def ordered(claims: Sequence[Claim], intent: Intent) -> list[Claim]:
    """The claims to say, in order: the lead first (the question decides what comes first), then the
    rest as planned; repeats and claims an earlier one already said are left out."""
    lead = [c for c in claims if kind_of(c) in LEAD[intent]][:1]
    said: list[Claim] = []
    for claim in [*lead, *(c for c in claims if c not in lead)]:
        covered = COVERED_BY.get(kind_of(claim), frozenset()) & {kind_of(c) for c in said}
        if not covered and not any(_same(claim, c) for c in said):
            said.append(claim)
    return said


def _same(a: Claim, b: Claim) -> bool:
    """The same statement, whatever its wording."""
    return msgspec.structs.replace(a, wording=1) == msgspec.structs.replace(b, wording=1)


# --- the schema the engine enforces while decoding ------------------------------------------------
def _claim_schema(kind: str, drivers: int, transactions: int) -> dict[str, Any]:
    properties: dict[str, Any] = {"claim": {"const": kind}}
    if kind == "change":
        properties["direction"] = {"enum": list(get_args(Direction))}
    elif kind == "driver":
        properties["n"] = {"type": "integer", "minimum": 1, "maximum": max(drivers, 1)}
        properties["direction"] = {"enum": list(get_args(DriverDirection))}
    elif kind == "transaction":
        properties["n"] = {"type": "integer", "minimum": 1, "maximum": max(transactions, 1)}
    elif kind == "payment_status":
        properties["status"] = {"enum": list(get_args(PaymentStatus))}
    elif kind == "next_step":
        properties["action"] = {"enum": list(get_args(Action))}
    required = list(properties)
    properties["wording"] = {"enum": list(range(1, WORDINGS + 1))}
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _kinds(intent: Intent, drivers: int, transactions: int) -> list[str]:
    """The claim types a plan for this intent may use, given what FACTS number."""
    absent = {"driver"} if not drivers else set()
    absent |= {"transaction"} if not transactions else set()
    return [k for k in CLAIM_TYPES if k in FITS[intent] and k not in absent]


@functools.lru_cache(maxsize=512)
def plan_schema(intent: Intent, drivers: int, transactions: int) -> dict[str, Any]:
    """The JSON schema of a plan for this intent: its lead first (`prefixItems`), then the other claims
    that fit the intent, indices bounded by what FACTS number (a few distinct schemas: the engines compile each
    grammar once). Callers must not modify it."""
    kinds = _kinds(intent, drivers, transactions)
    schemas = {k: _claim_schema(k, min(drivers, MAX_DRIVERS), transactions) for k in kinds}
    lead = [schemas[k] for k in kinds if k in LEAD[intent]]
    # The lead is said once (a small model otherwise repeats it to the token limit); a charge
    # answer may still name a second transaction.
    rest = [schemas[k] for k in kinds if k not in LEAD[intent] or k == "transaction"]
    array = {
        "type": "array",
        "prefixItems": [{"anyOf": lead}],
        "items": {"anyOf": rest},
        "minItems": 1,
        "maxItems": MAX_CLAIMS,
    }
    return {
        "type": "object",
        "properties": {"claims": array},
        "required": ["claims"],
        "additionalProperties": False,
    }


@functools.lru_cache(maxsize=512)
def plan_grammar(intent: Intent, drivers: int, transactions: int) -> str:
    """The same plans as `plan_schema`, as a GBNF grammar for llama.cpp, in the compact form of the
    prompt's examples. llama.cpp's own schema conversion lets whitespace in between every token (a
    small model then writes newlines until the token limit) and turns `prefixItems` into a tuple."""
    schema = plan_schema(intent, drivers, transactions)
    array = schema["properties"]["claims"]
    rules = {"root": f'"{{\\"claims\\": [" lead (", " claim){{0,{MAX_CLAIMS - 1}}} "]}}"'}
    for claim in array["prefixItems"][0]["anyOf"] + array["items"]["anyOf"]:
        kind = claim["properties"]["claim"]["const"]
        name = kind.replace("_", "-")
        if name in rules:
            continue  # a charge's transaction: lead and rest
        parts: list[str] = []
        for key, prop in claim["properties"].items():
            values = (
                [prop["const"]]
                if "const" in prop
                else prop.get("enum") or list(range(prop["minimum"], prop["maximum"] + 1))
            )
            choice = " | ".join(_gbnf(json_value(v)) for v in values)
            part = ('", " ' if parts else "") + f"{_gbnf(json_value(key) + ': ')} ({choice})"
            parts.append(part if key in claim["required"] else f"({part})?")
        rules[name] = '"{" ' + " ".join(parts) + ' "}"'
    rules["lead"] = " | ".join(_rule(c) for c in array["prefixItems"][0]["anyOf"])
    rules["claim"] = " | ".join(_rule(c) for c in array["items"]["anyOf"])
    return "\n".join(f"{name} ::= {rule}" for name, rule in rules.items()) + "\n"


def _rule(claim_schema: dict[str, Any]) -> str:
    return str(claim_schema["properties"]["claim"]["const"]).replace("_", "-")


def json_value(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def _gbnf(text: str) -> str:
    """A GBNF string literal of `text`."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


_decode_claim: msgspec.json.Decoder[AnyClaim] = msgspec.json.Decoder(AnyClaim)


def decode_claim(raw: bytes | str) -> AnyClaim:
    """One claim object as the model wrote it; msgspec.ValidationError/DecodeError if it is none."""
    return _decode_claim.decode(raw)
