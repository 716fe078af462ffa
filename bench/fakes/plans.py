"""Plans a fake engine writes (app/domain/plan.py), and what a customer then reads, for the test
document's account A-1 (tests/factories.py): October's bill is 12.00 higher than September's
112.99, because of a new 12.00 City Gym membership; nothing has been paid since October closed."""

from __future__ import annotations

import json
import random
import re
from typing import Any

from app.domain.claims import sign_word
from app.domain.facts import BillFacts
from app.domain.intents import mentioned
from app.domain.plan import PlanCheck
from app.domain.slots import items
from app.domain.vocabulary import Intent

CHANGE_UP: dict[str, Any] = {"claim": "change", "direction": "up"}
DRIVER_1_UP: dict[str, Any] = {"claim": "driver", "n": 1, "direction": "up"}


def plan(*claims: dict[str, Any]) -> str:
    """The model's output: the claims as a plan object, compact as the grammar writes it."""
    return json.dumps({"claims": list(claims)}, ensure_ascii=False)


# A bill-change answer, and the same said to the customer.
GOOD = plan(CHANGE_UP, DRIVER_1_UP)
GOOD_SHOWN = (
    "Your bill is 12.00 EUR higher than last month: the new balance is 124.99 EUR, against 112.99 EUR on your"
    " previous statement. The largest change is purchases at “City Gym”: 12.00 EUR more than on your previous"
    " statement."
)


def true_plan(facts: BillFacts, intent: Intent, question: str = "") -> str:
    """A plan that holds for these facts: the intent's lead claim, and a bill change's largest cause."""
    if intent == "bill_change":
        claims: list[dict[str, Any]] = [{"claim": "change", "direction": sign_word(facts.difference)}]
        if facts.drivers and facts.difference:
            claims.append({"claim": "driver", "n": 1, "direction": sign_word(facts.drivers[0].amount)})
        return plan(*claims)
    if intent == "charge":
        check = PlanCheck(facts, intent, mentioned(question, {e.label for e in facts.entries}))
        named = sorted(check.focus) or ([1] if items(facts) else [])
        return plan({"claim": "transaction", "n": named[0]} if named else {"claim": "no_answer"})
    if intent == "fees_interest":
        return plan({"claim": "fees_interest"})
    if intent == "policy":  # no passage offered: the help content does not say
        return plan({"claim": "no_answer"})
    return plan({"claim": "payment_status", "status": facts.payment.status})


_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|[()|?]|\{\d+,\d+\}|[a-z][a-z0-9-]*')


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


def schema_instance(schema: dict[str, Any], rng: random.Random) -> Any:
    """A random instance of a JSON schema of the kinds the plan schemas use (anyOf, const, enum,
    objects with optional properties, arrays with prefixItems, items and length bounds)."""
    if "anyOf" in schema:
        return schema_instance(rng.choice(schema["anyOf"]), rng)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if schema["type"] == "object":
        required = schema.get("required", [])
        return {
            name: schema_instance(prop, rng)
            for name, prop in schema["properties"].items()
            if name in required or rng.random() < 0.5
        }
    first, items = schema.get("prefixItems", []), schema.get("items") or {}
    count = rng.randint(schema.get("minItems", 0), schema["maxItems"]) if items else len(first)
    return [schema_instance(first[i] if i < len(first) else items, rng) for i in range(count)]
