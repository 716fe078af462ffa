"""Plans a fake engine writes (app/domain/plan.py), and what a customer then reads, for the test
document's account A-1 (tests/factories.py): October's bill is 12.00 higher than September's
112.99, because of a new 12.00 City Gym membership; nothing has been paid since October closed."""

from __future__ import annotations

import json
from typing import Any

CHANGE_UP: dict[str, Any] = {"claim": "change", "direction": "up"}
DRIVER_1_UP: dict[str, Any] = {"claim": "driver", "n": 1, "direction": "up"}


def plan(*claims: dict[str, Any]) -> str:
    """The model's output: the claims as a plan object, compact as the grammar writes it."""
    return json.dumps({"claims": list(claims)}, ensure_ascii=False)


# A bill-change answer, and the same said to the customer.
GOOD = plan(CHANGE_UP, DRIVER_1_UP)
GOOD_SHOWN = (
    "Your bill is 12.00 EUR higher than last month: the new balance is 124.99 EUR, against 112.99 EUR on your"
    " previous statement. The largest change is purchases at “City Gym”, which went up by 12.00 EUR."
)
