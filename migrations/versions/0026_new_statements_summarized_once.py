"""statement summaries: a load's new statements summarized once, with their lines

Revision ID: 0026
Revises: 0025

A first load inserted its statements, whose trigger summarized each of them with no line (24,000
empty summaries at 2,000 accounts), then its lines, whose trigger summarized the same statements
again, this time updating every summary row. Inside a transaction that sets
`bill_assistant.summaries_deferred` to `on`, the statements trigger leaves new statements to the
loader (app/data/staging.py `statements_summarized_once`): the lines' trigger summarizes those that
get lines, and the loader those that got none. Every other writer is as before.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels = None
depends_on = None


def _0019() -> str:
    spec = importlib.util.spec_from_file_location("m0019", Path(__file__).with_name("0019_exact_summary_refresh.py"))
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    before: str = module.STATEMENTS_CHANGED
    return before


_INSERTED = "    IF TG_OP = 'INSERT' THEN\n"
_DEFERRED = (
    _INSERTED + "        IF current_setting('bill_assistant.summaries_deferred', true) = 'on' THEN\n"
    "            RETURN NULL;\n"
    "        END IF;\n"
)


def upgrade() -> None:
    before = _0019()
    assert _INSERTED in before, "0019's statements trigger is not the one this guards"
    op.execute(before.replace(_INSERTED, _DEFERRED, 1))


def downgrade() -> None:
    op.execute(_0019())
