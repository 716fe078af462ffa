"""statement lines changed: a transaction that never deferred summaries does not look for new statements

Revision ID: 0031
Revises: 0030

0027 asks whether a statement is new (it has no summary) only inside a load that defers new
statements' summaries: `current_setting(...) = 'on' AND NOT EXISTS (...)`. Where the setting was never
set (a nightly load whose statements file is as last loaded, every other writer), `current_setting`
is NULL, and `NULL AND x` must know x: every touched statement's summary was looked for, read as a
hash of all the summaries (18 ms of a month-to-date nightly's 250, docs/benchmarks.md). An unset
setting now reads as off. What is bumped and refreshed is unchanged.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from alembic import op

revision: str = "0031"
down_revision: str | None = "0030"
branch_labels = None
depends_on = None

_ASKED = "current_setting('bill_assistant.summaries_deferred', true) = 'on'"


def _0027() -> str:
    spec = importlib.util.spec_from_file_location(
        "m0027", Path(__file__).with_name("0027_new_statements_not_bumped.py")
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    before: str = module.LINES_CHANGED
    assert _ASKED in before
    return before


def upgrade() -> None:
    op.execute(_0027().replace(_ASKED, f"COALESCE({_ASKED}, false)"))


def downgrade() -> None:
    op.execute(_0027())
