"""Statements bound by name (app/data/sql.py): a reordered struct binds each value to the same column,
a missing name fails loudly, and the `$n` text is made once, leaving casts, strings and comments alone."""

from __future__ import annotations

import re
import uuid
from datetime import date

import msgspec
import pytest

from app.data import answer_cache, audit, history
from app.data.audit import AUDIT_COLUMNS, AuditRow, insert_answer
from app.data.sql import MissingParameter, Statement

ROW = AuditRow(
    id=uuid.UUID(int=7),
    tenant_id=1,
    account_id=2,
    statement_id=3,
    channel="api",
    origin="request",
    question="Why is my bill higher?",
    locale="en",
    answer='{"explanation": "..."}',
    source="model",
    intent="bill_change",
    prompt_version="v1",
    model="m",
    usage='{"prompt_tokens": 1}',
    fallback_reason=None,
    timings='{"total": 1.0}',
    stage_starts='{"engine": 0.5}',
)
# AuditRow's fields, declared in the opposite order.
Reversed = msgspec.defstruct("Reversed", [(name, object) for name in reversed(AUDIT_COLUMNS)], kw_only=True)


def bound_by_column(statement: Statement, values: msgspec.Struct) -> dict[str, object]:
    """Each column of the audit insert with the argument its expression receives."""
    insert = re.fullmatch(r"INSERT INTO answers \((.*)\)\nSELECT (.*)", statement.sql, re.S)
    assert insert is not None
    columns, expressions = insert[1].split(", "), insert[2].split(", ")
    numbers = [int(re.findall(r"\$(\d+)", expression)[0]) for expression in expressions]
    args = statement.args(values)
    return {column: args[n - 1] for column, n in zip(columns, numbers, strict=True)}


def test_a_struct_with_its_fields_in_another_order_binds_each_value_to_the_same_column() -> None:
    reordered = Reversed(**msgspec.structs.asdict(ROW))
    assert msgspec.structs.astuple(reordered) != msgspec.structs.astuple(ROW)  # by position they differ
    assert audit._INSERT.args(reordered) == audit._INSERT.args(ROW)
    expected = msgspec.structs.asdict(ROW)
    assert bound_by_column(audit._INSERT, reordered) == bound_by_column(audit._INSERT, ROW) == expected


def test_a_missing_name_fails_naming_it() -> None:
    statement = Statement("SELECT :tenant_id, :account_ref, :as_of")
    with pytest.raises(MissingParameter, match=r"no value for :account_ref, :as_of in dict"):
        statement.args({"tenant_id": 1})
    Partial = msgspec.defstruct("Partial", [("tenant_id", int), ("as_of", date)])
    with pytest.raises(MissingParameter, match=r"no value for :account_ref in Partial"):
        statement.args(Partial(1, date(2026, 11, 10)))


def test_the_dollar_form_numbers_each_name_once_and_leaves_casts_strings_and_comments_alone() -> None:
    statement = Statement(
        "SELECT :a, :b::text, ':not_a', \"x:y\", CAST(:a AS int) -- :nor_this\nFROM t WHERE x ->> 'k:v' = :c"
    )
    assert statement.sql == (
        "SELECT $1, $2::text, ':not_a', \"x:y\", CAST($1 AS int) -- :nor_this\nFROM t WHERE x ->> 'k:v' = $3"
    )
    assert statement.names == ("a", "b", "c")
    assert statement.args({"c": 3, "b": 2, "a": 1, "unused": 4}) == (1, 2, 3)
    assert Statement("SELECT 1").args({}) == ()
    assert Statement("SELECT :only").args({"only": 5}) == (5,)


def test_the_answers_insert_takes_exactly_its_columns() -> None:
    values = {c: "NULL" for c in AUDIT_COLUMNS}
    with pytest.raises(ValueError, match="missing or unknown: stage_starts"):
        insert_answer({c: v for c, v in values.items() if c != "stage_starts"})
    with pytest.raises(ValueError, match="missing or unknown: extra"):
        insert_answer(values | {"extra": "NULL"})


def test_the_history_and_the_cache_hit_statements_bind_every_parameter_by_name() -> None:
    where = {"tenant_id": 1, "account_ref": "A-1", "period_end": None, "as_of": date(2026, 11, 10)}
    where |= {"question_lower": "why?"}
    assert len(history._HISTORY_SQL.args(where)) == len(history._HISTORY_SQL.names) == 5
    key = {"tenant_id": 1, "statement_id": 2, "facts_digest": "f" * 64, "intent": "bill_change", "locale": "en"}
    key |= {"prompt_version": "v1", "engine_profile": "p"}
    row = {"id": uuid.UUID(int=1), "account_id": 3, "channel": "api", "origin": "request", "question": "Why?"}
    row |= {"as_of": date(2026, 11, 10), "timings": "{}", "stage_starts": "{}"}
    assert len(answer_cache._SERVED.args(key | row)) == len(answer_cache._SERVED.names) == 15
    with pytest.raises(MissingParameter):
        answer_cache._SERVED.args(key)
