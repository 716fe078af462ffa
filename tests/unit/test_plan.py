"""The plan's form: the GBNF grammar the embedded engine decodes under accepts exactly the compact
plans the JSON schema allows (lead first, claims that fit the intent, indices FACTS number), and the
claims are said lead first, each once."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import pytest

from app.domain.plan import (
    CLAIM_TYPES,
    FITS,
    LEAD,
    MAX_CLAIMS,
    Change,
    DriverClaim,
    MinimumDue,
    NewBalance,
    NextStep,
    decode_claim,
    ordered,
    plan_grammar,
    plan_schema,
)
from app.domain.vocabulary import Intent

INTENTS: list[Intent] = ["bill_change", "charge", "fees_interest", "payment"]
_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|[()|?]|\{\d+,\d+\}|[a-z][a-z-]*')


def grammar_regex(grammar: str) -> re.Pattern[str]:
    """The grammar as a regular expression: it has no recursion, so each rule name is replaced by
    its own expression."""
    rules = dict(line.split(" ::= ", 1) for line in grammar.strip().splitlines())

    def expand(name: str) -> str:
        out = []
        for token in _TOKEN.findall(rules[name]):
            if token.startswith('"'):
                out.append(re.escape(json.loads(token)))
            elif token in ("(", ")", "|", "?") or token.startswith("{"):
                out.append("(?:" if token == "(" else token)
            else:
                out.append(f"(?:{expand(token)})")
        return "".join(out)

    return re.compile(expand("root"))


def claims_for(kind: str, drivers: int, transactions: int) -> list[dict[str, Any]]:
    """Every claim of this kind with in-range and out-of-range arguments."""
    base: dict[str, Any] = {"claim": kind}
    if kind == "change":
        return [{**base, "direction": d} for d in ("up", "down", "same")]
    if kind == "driver":
        return [{**base, "n": n, "direction": d} for n in (1, drivers + 1) for d in ("up", "down")]
    if kind == "transaction":
        return [{**base, "n": n} for n in (1, transactions, transactions + 1)]
    if kind == "payment_status":
        return [{**base, "status": s} for s in ("paid", "unpaid")]
    if kind == "next_step":
        return [{**base, "action": "agent"}, {**base, "action": "pay", "wording": 2}]
    return [base, {**base, "wording": 2}]


def allowed(plan: list[dict[str, Any]], intent: Intent, drivers: int, transactions: int) -> bool:
    """What the schema allows, said independently of it."""
    for claim in plan:
        if claim["claim"] not in FITS[intent] or claim.get("n", 1) > (
            drivers if claim["claim"] == "driver" else transactions
        ):
            return False
    rest_ok = all(c["claim"] not in LEAD[intent] or c["claim"] == "transaction" for c in plan[1:])
    return 1 <= len(plan) <= MAX_CLAIMS and plan[0]["claim"] in LEAD[intent] and rest_ok


@pytest.mark.parametrize("intent", INTENTS)
def test_the_grammar_accepts_exactly_the_plans_the_schema_allows(intent: Intent) -> None:
    drivers, transactions = 2, 3
    pattern = grammar_regex(plan_grammar(intent, drivers, transactions))
    every = [c for kind in CLAIM_TYPES for c in claims_for(kind, drivers, transactions)]
    checked = 0
    for size in (1, 2):
        for plan in itertools.product(every, repeat=size):
            text = json.dumps({"claims": list(plan)})
            assert bool(pattern.fullmatch(text)) == allowed(list(plan), intent, drivers, transactions), text
            checked += 1
    assert checked > 500
    assert not pattern.fullmatch(json.dumps({"claims": []}))
    assert not pattern.fullmatch(json.dumps({"claims": [{"claim": "period"}] * (MAX_CLAIMS + 1)}))
    assert not pattern.fullmatch(json.dumps({"claims": [{"claim": "change", "direction": "up"}]}, indent=1))


def test_the_schema_puts_the_intents_lead_first_and_bounds_indices() -> None:
    schema = plan_schema("payment", 0, 0)
    claims = schema["properties"]["claims"]
    assert [c["properties"]["claim"]["const"] for c in claims["prefixItems"][0]["anyOf"]] == ["payment_status"]
    assert {c["properties"]["claim"]["const"] for c in claims["items"]["anyOf"]} == FITS["payment"] - LEAD["payment"]
    assert all(c["additionalProperties"] is False for c in claims["items"]["anyOf"])
    driver = next(
        c for c in plan_schema("bill_change", 9, 0)["properties"]["claims"]["items"]["anyOf"]
        if c["properties"]["claim"]["const"] == "driver"
    )  # fmt: skip
    assert driver["properties"]["n"] == {"type": "integer", "minimum": 1, "maximum": 6}  # FACTS list six


def test_claims_are_decoded_strictly() -> None:
    assert decode_claim('{"claim": "driver", "n": 2, "direction": "down"}') == DriverClaim(n=2, direction="down")
    for bad in ('{"claim": "waive_interest"}', '{"claim": "change", "direction": "up", "amount": "13.00"}'):
        with pytest.raises(Exception, match=r"Invalid value|unknown field"):
            decode_claim(bad)


def test_the_lead_is_said_first_and_nothing_twice() -> None:
    up, cause = Change(direction="up"), DriverClaim(n=1, direction="up")
    planned = [NewBalance(), cause, up, DriverClaim(n=1, direction="up", wording=2), MinimumDue(), MinimumDue()]
    # The change states the new balance: said once; the same driver in other words: said once.
    assert ordered(planned, "bill_change") == [up, cause, MinimumDue()]
    assert ordered([NextStep(action="agent")], "payment") == [NextStep(action="agent")]
