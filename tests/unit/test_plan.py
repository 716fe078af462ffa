"""The plan's form: the grammar the embedded engine decodes under (the same plans as the JSON schema)
admits only plans the check accepts, and every true claim after the lead; the schema holds the facts'
own values; the claims are said lead first, each once."""

from __future__ import annotations

import json
import random
from datetime import date

import msgspec
import pytest

from app.domain.claims import (
    MAX_CLAIMS,
    Change,
    Claim,
    DriverClaim,
    MinimumDue,
    NewBalance,
    NextStep,
    decode_claim,
    kind_of,
)
from app.domain.facts import BillFacts, compute_facts
from app.domain.plan import FITS, LEAD, PlanCheck, ordered
from app.domain.plan_schema import plan_grammar, plan_schema
from app.domain.slots import items
from app.domain.vocabulary import Intent
from bench.fakes.plans import grammar_regex
from tests.generated_facts import accepted_alone, candidate_claims, random_facts
from tests.histories import GYM, OCT, SEP, history

INTENTS: list[Intent] = ["bill_change", "charge", "fees_interest", "payment"]


def compact(claims: list[Claim]) -> str:
    """A plan's JSON as the model writes it under the grammar."""
    return json.dumps({"claims": [msgspec.to_builtins(c) for c in claims]})


def served(facts: BillFacts, intent: Intent, focus: tuple[str, ...], claims: list[Claim]) -> bool:
    """Whether the plan check accepts every claim and the plan holds what its intent needs."""
    check = PlanCheck(facts, intent, focus)
    return all(check.check(c) is None for c in claims) and check.missing() is None


@pytest.mark.parametrize("seed", range(12))
def test_the_grammar_admits_only_plans_the_check_accepts_and_every_true_claim(seed: int) -> None:
    """Sound: a plan the grammar (of these facts and question) admits is accepted by the check. And
    complete: after the lead, every claim the check accepts on its own (but a repeat of the lead) is
    admitted. Over generated accounts, every intent, a charge question naming a merchant or not."""
    rng = random.Random(seed)
    facts = random_facts(rng)
    named = tuple(rng.sample(sorted({e.label for e in items(facts)}), k=1)) if items(facts) else ()
    admitted = 0
    for intent, focus in [*((i, ()) for i in INTENTS), ("charge", named)]:
        check = PlanCheck(facts, intent, focus)
        pattern = grammar_regex(plan_grammar(check.allowed()))
        candidates = list(candidate_claims(facts))
        firsts = [[c] for c in candidates] + [[a, b] for a in candidates for b in candidates if kind_of(a) == "change"]
        leads = [p for p in firsts if pattern.fullmatch(compact(p))]
        assert leads, (intent, focus)  # some plan is always possible
        for plan in leads:
            assert served(facts, intent, focus, plan), compact(plan)
        lead = leads[0]
        for claim in accepted_alone(facts, intent, focus):
            plan = [*lead, claim]
            fits = kind_of(claim) not in LEAD[intent] or (
                kind_of(claim) == "transaction" and len(check.allowed().transactions) > 1
            )
            if fits:
                assert pattern.fullmatch(compact(plan)), compact(plan)
            admitted += bool(pattern.fullmatch(compact(plan)))
            if pattern.fullmatch(compact(plan)):
                assert served(facts, intent, focus, plan), compact(plan)
        for claim in candidates:  # anything false, after a true lead, is not admitted
            if PlanCheck(facts, intent, focus).check(claim) is not None:
                assert not pattern.fullmatch(compact([*lead, claim])), compact([*lead, claim])
    assert admitted > 10
    assert not pattern.fullmatch(json.dumps({"claims": [*map(msgspec.to_builtins, lead)] * (MAX_CLAIMS + 1)}))
    assert not pattern.fullmatch(json.dumps({"claims": [msgspec.to_builtins(c) for c in lead]}, indent=1))


def test_the_schema_puts_the_lead_first_and_only_the_facts_values_in_it() -> None:
    facts = compute_facts(history(GYM, [SEP, OCT]), date(2026, 11, 10))  # 12.00 higher, City Gym; unpaid
    schema = plan_schema(PlanCheck(facts, "payment").allowed())
    claims = schema["properties"]["claims"]
    (lead,) = claims["prefixItems"][0]["anyOf"]
    assert lead["properties"]["status"] == {"const": "unpaid"}
    assert {c["properties"]["claim"]["const"] for c in claims["items"]["anyOf"]} == FITS["payment"] - LEAD["payment"]
    assert all(c["additionalProperties"] is False for c in claims["items"]["anyOf"])
    bill = plan_schema(PlanCheck(facts, "bill_change").allowed())["properties"]["claims"]
    change, cause = (item["anyOf"] for item in bill["prefixItems"])  # the cause right after the change
    assert [c["properties"]["direction"] for c in change] == [{"const": "up"}]
    assert [(c["properties"]["n"], c["properties"]["direction"]) for c in cause] == [({"const": 1}, {"const": "up"})]
    assert bill["minItems"] == 2


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
