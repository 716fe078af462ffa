"""matplotlib is the reports' (the `reports` extra), not the service's: the service, the eval gate and
the A/B comparison import without it, and a chart asked for without it says how to get it."""

from __future__ import annotations

import subprocess
import sys

from app.reports.charts import MISSING
from app.settings import PROJECT_ROOT


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_service_and_the_gates_do_not_import_matplotlib() -> None:
    code = (
        "import sys\n"
        "import app.api.app, app.cli.serve, app.eval.report, app.replay.ab_compare, app.replay.report\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))\n"
    )
    done = _run(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_chart_without_matplotlib_says_how_to_get_it() -> None:
    code = (
        "import sys\n"
        "sys.modules['matplotlib'] = None  # as if not installed: importing it raises ImportError\n"
        "from app.reports.charts import ChartsUnavailable, bar_chart\n"
        "try:\n"
        "    bar_chart('fallbacks', {'a': 0.5}, 'caption')\n"
        "except ChartsUnavailable as exc:\n"
        "    print(exc.format_message())\n"
    )
    done = _run(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == MISSING
    assert "pip install 'bill-assistant[reports]'" in MISSING


def test_with_matplotlib_a_chart_is_drawn() -> None:
    from app.reports.charts import bar_chart

    assert "<svg" in bar_chart("fallbacks", {"a": 0.5}, "caption")
