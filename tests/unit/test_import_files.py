"""Import files are checked whole before anything is written: a bad file is rejected, naming the field."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from app.data.import_format import parse
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


WINDOW = "outside 1970-01-01..2099-12-31"
ACC0_AT = "at `$.customers[0].accounts[0]"
TX0_AT, ST0_AT = f"{ACC0_AT}.transactions[0]", f"{ACC0_AT}.statements[0]"


@pytest.mark.parametrize(
    ("doc", "needle"),
    [
        (_with([*TX0, "posted_on"], "0001-01-01"), f"{WINDOW} - {TX0_AT}.posted_on`"),
        (_with([*ST0, "due_date"], "9999-12-31"), f"{WINDOW} - {ST0_AT}.due_date`"),
        (_with([*ST0, "period_start"], "1969-12-31"), f"{ST0_AT}.period_start`"),
        (_with([*TX0, "ref"], "T-1\n"), f"{TX0_AT}.ref`"),
        (_with([*TX0, "ref"], " T-1"), f"{TX0_AT}.ref`"),
        (_with(["customers", 0, "ref"], "C-1\x00"), "at `$.customers[0].ref`"),
        (_with([*TX0, "amount"], "12.00\n"), f"{TX0_AT}.amount`"),
        (_with([*ST0, "minimum_due"], " 25.00"), f"{ST0_AT}.minimum_due`"),
        (_with(["customers", 0, "accounts", 0, "currency"], "EUR\n"), f"{ACC0_AT}.currency`"),
        (_with(["customers", 0, "name"], "Ann\x00Lee"), "at `$.customers[0].name`"),
        (_with([*TX0, "merchant"], "City\x07Gym"), f"{TX0_AT}.merchant`"),
        (_with([*TX0, "description"], "line one\nline two"), f"{TX0_AT}.description`"),
        (_with(["customers", 0, "accounts", 0, "masked_number"], "**** 1234\x9b"), f"{ACC0_AT}.masked_number`"),
        (_with(["tenant"], "bank\x00"), "at `$.tenant`"),
    ],
)  # fmt: skip
def test_out_of_range_dates_padded_values_and_control_characters_are_rejected(doc: dict[str, Any], needle: str) -> None:
    with pytest.raises(ImportRejected) as err:
        parse(msgspec.json.encode(doc))
    assert needle in str(err.value)


@pytest.mark.parametrize("when", ["1970-01-01", "2099-12-31"])
def test_the_date_window_includes_its_ends(when: str) -> None:
    doc = _with([*TX0, "posted_on"], when)
    assert parse(msgspec.json.encode(doc)).customers[0].accounts[0].transactions[0].posted_on.isoformat() == when


def test_a_ref_may_hold_inner_spaces() -> None:
    doc = _with([*TX0, "ref"], "T 1")
    assert parse(msgspec.json.encode(doc)).customers[0].accounts[0].transactions[0].ref == "T 1"
