"""Plans a fake engine writes (app/domain/plan.py), and what a customer then reads, for the test
document's account A-1 (tests/factories.py): October's bill is 12.00 higher than September's
112.99, because of a new 12.00 City Gym membership; nothing has been paid since October closed."""

from __future__ import annotations

import json
from typing import Any

from app.domain.facts import BillFacts
from app.domain.intents import mentioned
from app.domain.plan import PlanCheck, sign_word
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
    return plan({"claim": "payment_status", "status": facts.payment.status})
