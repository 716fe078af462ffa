"""A nightly `bill-assistant import` of CSV files is a fresh process: its start counts against the
load's time (issue 36, item 7). The command and everything a CSV or JSON load runs import neither
SQLAlchemy (about 0.45 s), nor Alembic, nor the web framework, nor Jinja (about 20 ms: a load renders
no template); `migrate` imports them when run."""

from __future__ import annotations

import subprocess
import sys

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
