"""Import files are checked whole before anything is written: a bad file is rejected, naming the field."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from app.data.importer import parse
from app.errors import ImportRejected
from tests.factories import document


def _with(path: list[Any], value: Any) -> dict[str, Any]:
    doc = document("any")
    target: Any = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


TX0 = ["customers", 0, "accounts", 0, "transactions", 0]
ST0 = ["customers", 0, "accounts", 0, "statements", 0]


@pytest.mark.parametrize(
    ("doc", "needle"),
    [
        (_with([*TX0, "amount"], "12.001"), "$.customers[0].accounts[0].transactions[0].amount"),
        (_with([*TX0, "amount"], 12.0), "$.customers[0].accounts[0].transactions[0].amount"),
        (_with([*TX0, "amount"], "-12.00"), "amount must be positive for a purchase"),
        (_with([*TX0, "kind"], "gift"), "$.customers[0].accounts[0].transactions[0].kind"),
        (_with([*TX0, "posted_on"], "2026-02-30"), "$.customers[0].accounts[0].transactions[0].posted_on"),
        (_with([*TX0, "colour"], "red"), "unknown field `colour`"),
        (_with([*TX0, "ref"], "T-2"), "duplicate transaction ref 'T-2'"),
        (_with(["customers", 0, "locale"], "fr"), "$.customers[0].locale"),
        (_with(["customers", 0, "accounts", 0, "currency"], "euro"), "$.customers[0].accounts[0].currency"),
        (_with([*ST0, "due_date"], "2026-09-01"), "due_date is before period_end"),
        (_with([*ST0, "period_end"], "2026-10-05"), "statement periods overlap"),
        (_with(["customers", 0, "accounts", 0, "opening_balance"], None), "opening_balance"),
        ({"tenant": "x"}, "missing required field `customers`"),
    ],
)
def test_a_bad_file_is_rejected_naming_the_field(doc: dict[str, Any], needle: str) -> None:
    with pytest.raises(ImportRejected) as err:
        parse(msgspec.json.encode(doc))
    assert needle in str(err.value)


def test_not_json_is_rejected() -> None:
    with pytest.raises(ImportRejected, match="not valid JSON"):
        parse(b"{customers: nope")
