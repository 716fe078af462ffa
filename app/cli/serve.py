"""`serve`: the HTTP service under uvicorn."""

from __future__ import annotations

import contextlib
import math
import signal
import socket
import sys
from collections.abc import Callable

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

    from app.answers.service import AnswerService
    from app.api.app import create_app
    from app.inference.scheduler import CUT_OFF_GRACE_S

    settings = settings or load_settings()
    app = create_app(settings, database_url)

    def begin_drain() -> None:
        answers: AnswerService | None = app.state.get("answers")
        if answers is not None:
            answers.scheduler.close(settings.drain_timeout_s)

    class DrainingServer(uvicorn.Server):
        """uvicorn's graceful shutdown waits for every open request before the app's lifespan ends:
        start the drain (new work refused, queued work shed, engine requests cut short at the
        deadline) as soon as the signal comes, not after that wait."""

        def __init__(self, config: uvicorn.Config, on_exit: Callable[[], None]) -> None:
            super().__init__(config)
            self._on_exit = on_exit

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            self._on_exit()
            await super().shutdown(sockets)

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        loop="uvloop",
        http="httptools",
        access_log=False,
        log_level="warning",
        # Engine requests are cut short at the drain deadline and answered with the deterministic
        # text; after the grace they get to answer and be audited, whatever still runs is cancelled.
        timeout_graceful_shutdown=math.ceil(settings.drain_timeout_s + CUT_OFF_GRACE_S),
    )
    server = DrainingServer(config, begin_drain)
    # uvicorn drains in-flight requests on SIGTERM/SIGINT, then re-raises the signal to the handler
    # found at start: make that a normal exit, so exit hooks (the embedded Postgres) run.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with contextlib.suppress(KeyboardInterrupt):
        server.run()
    if not server.started:
        sys.exit(3)  # as uvicorn.run: the app did not start (its lifespan failed)
