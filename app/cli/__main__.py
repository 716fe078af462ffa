"""`python -m app.cli`: the `bill-assistant` command."""

from app.cli import run

run()
