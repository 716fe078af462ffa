"""A nightly `bill-assistant import` of CSV files is a fresh process: its start counts against the
load's time (issue 36, item 7). The command and everything a CSV or JSON load runs import neither
SQLAlchemy (about 0.45 s), nor Alembic, nor the web framework, nor Jinja (about 20 ms: a load renders
no template); `migrate` imports them when run."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from app import cli
from app.settings import PROJECT_ROOT


def test_the_import_command_loads_without_sqlalchemy() -> None:
    code = (
        "import sys\n"
        "from app.cli import main\n"
        "main.get_command(None, 'import')\n"
        "import app.data.csv_import, app.data.importer, app.data.connecting\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'sqlalchemy', 'alembic', 'litestar', 'jinja2'}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_process_keeps_what_it_imported_out_of_the_collectors_walks(monkeypatch: pytest.MonkeyPatch) -> None:
    """`bill-assistant` (`run`) freezes what is imported before the command runs: the collections while
    a nightly load runs, and the last one at exit, skip it (14 ms of a 0.7 s nightly)."""
    frozen: list[int] = []
    monkeypatch.setattr(cli, "main", lambda: frozen.append(gc.get_freeze_count()))
    try:
        cli.run()
    finally:
        gc.unfreeze()  # this test process keeps its collector as it was
    assert frozen[0] > 10_000
