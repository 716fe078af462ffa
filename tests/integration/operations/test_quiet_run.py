"""`run` (bill-assistant demo) prints what it means to: not platformdirs' warning about
XDG_RUNTIME_DIR as the embedded Postgres starts, nor llama.cpp's "srv stop: cancel task" for every
stream the service ends early (issue 35, item 5)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.settings import PROJECT_ROOT

# A stream ended after its first words, as the service ends one whose plan it refused.
_STREAM_ENDED_EARLY = """
import asyncio, sys
from app.inference.embedded import EmbeddedEngine, default_model_path
from app.inference.engine import GenerationRequest, TextDelta

async def main() -> None:
    engine = EmbeddedEngine(default_model_path(), parallel=1, ctx_per_slot=512, threads=1, log_level=sys.argv[1])
    request = GenerationRequest(request_id="r1", prompt="Count to one hundred: one, two,", max_tokens=200)
    async for event in engine.generate(request):
        if isinstance(event, TextDelta):
            break
    await asyncio.sleep(1.0)  # llama.cpp notices the stop at its next token
    await engine.close()

asyncio.run(main())
"""


def _run(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, *args], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def test_the_embedded_database_starts_without_a_runtime_folder_warning(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in {"XDG_RUNTIME_DIR", "DATABASE_URL"}}
    output = _run(["-m", "app", "migrate"], {**env, "BILL_ASSISTANT_DATA_DIR": str(tmp_path)})
    assert "database is up to date" in output  # it did start the embedded cluster
    assert "XDG_RUNTIME_DIR" not in output


@pytest.mark.model
def test_a_stream_ended_early_is_not_logged_but_at_debug() -> None:
    assert "cancel task" not in _run(["-c", _STREAM_ENDED_EARLY, "INFO"], dict(os.environ))
    assert "cancel task" in _run(["-c", _STREAM_ENDED_EARLY, "DEBUG"], dict(os.environ))  # the case happened
