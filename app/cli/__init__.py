"""The `bill-assistant` command: migrate, import, tenants, agents, seed, serve, demo, precompute, traffic, replay, eval.

Each command group lives in its own module; this one makes the `main` group and registers them.
The settings are loaded and checked once, here, before any command runs (app/settings.py).
"""

from __future__ import annotations

import click

from app.cli.agents import agents
from app.cli.common import load_settings
from app.cli.database import import_cmd, migrate_cmd
from app.cli.demo import DEMO_AGENT, demo_agents, demo_cmd, seed_cmd
from app.cli.eval import eval_cmd
from app.cli.precompute import precompute_cmd
from app.cli.serve import serve_cmd
from app.cli.tenants import tenants
from app.cli.traffic import replay_cmd, traffic

__all__ = ["DEMO_AGENT", "demo_agents", "main"]


@click.group()
def main() -> None:
    """Bill Assistant: explains bank bills with exact numbers."""
    load_settings()  # a wrong variable ends every command here, with its one-line message


for command in (
    migrate_cmd,
    import_cmd,
    tenants,
    agents,
    seed_cmd,
    serve_cmd,
    demo_cmd,
    precompute_cmd,
    traffic,
    replay_cmd,
    eval_cmd,
):
    main.add_command(command)
