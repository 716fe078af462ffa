"""The `bill-assistant` command: migrate, import, tenants, agents, seed, serve, demo, precompute, traffic, replay,
eval, ab, knowledge.

Each command group lives in its own module; this one makes the `main` group and registers them by
name, imported when run: `import` need not load the web framework, the templates or the eval harness
(about 0.6 s of a nightly load's start). The settings are loaded and checked once, here, before any
command runs (app/settings/).
"""

from __future__ import annotations

import gc
from importlib import import_module

import click

from app.cli.common import load_settings

# name -> (module, attribute) of each command
COMMANDS = {
    "migrate": ("app.cli.database", "migrate_cmd"),
    "import": ("app.cli.database", "import_cmd"),
    "tenants": ("app.cli.tenants", "tenants"),
    "agents": ("app.cli.agents", "agents"),
    "seed": ("app.cli.demo", "seed_cmd"),
    "serve": ("app.cli.serve", "serve_cmd"),
    "demo": ("app.cli.demo", "demo_cmd"),
    "precompute": ("app.cli.precompute", "precompute_cmd"),
    "traffic": ("app.cli.traffic", "traffic"),
    "replay": ("app.cli.traffic", "replay_cmd"),
    "eval": ("app.cli.eval", "eval_cmd"),
    "conversations": ("app.cli.conversations", "conversations"),
    "ab": ("app.cli.ab", "ab_cmd"),
    "knowledge": ("app.cli.knowledge", "knowledge"),
}


class LazyGroup(click.Group):
    """A group whose commands are imported when one is run (or listed by --help)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attribute = COMMANDS[cmd_name]
        command: click.Command = getattr(import_module(module), attribute)
        return command


@click.group(cls=LazyGroup)
def main() -> None:
    """Bill Assistant: explains bank bills with exact numbers."""
    load_settings()  # a wrong variable ends every command here, with its one-line message


def run() -> None:
    """The `bill-assistant` process (also `python -m app` and `python -m app.cli`)."""
    # What is imported by now (the driver, asyncio, click, the settings) lives as long as the process:
    # the collector need not walk it again, while the command runs nor at exit (a nightly import: 14 ms
    # of 0.7 s). In-process callers (tests) call `main` and keep their collector as it was.
    gc.freeze()
    main()
