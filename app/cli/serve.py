"""`serve`: the HTTP service under uvicorn."""

from __future__ import annotations

import contextlib
import signal
import sys

import click

from app.cli.common import database_url, load_settings
from app.settings import Settings


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True)
def serve_cmd(host: str, port: int) -> None:
    """Run the HTTP service."""
    serve(database_url(), host, port)


def serve(database_url: str, host: str, port: int, settings: Settings | None = None) -> None:
    import uvicorn

    from app.api.app import create_app

    app = create_app(settings or load_settings(), database_url)
    # uvicorn drains in-flight requests on SIGTERM/SIGINT, then re-raises the signal to the handler
    # found at start: make that a normal exit, so exit hooks (the embedded Postgres) run.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.run(app, host=host, port=port, loop="uvloop", http="httptools", access_log=False, log_level="warning")
