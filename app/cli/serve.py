"""`serve`: the HTTP service under uvicorn, in one process or several sharing the port.

With `--workers N` > 1 every worker is a process of its own (uvicorn's supervisor starts, watches
and replaces them); they share what must be shared the way separate replicas do: admission in
Postgres (ADMISSION=shared, app/data/admission.py), and Prometheus samples through a directory of
per-process files (PROMETHEUS_MULTIPROC_DIR), so one scrape sees every worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import secrets
import shutil
import signal
import sys
import tempfile
from types import FrameType
from typing import Any

import click
from litestar import Litestar

from app.cli.common import load_settings
from app.data.connecting import resolve_database_url
from app.data.database import connection_budget
from app.settings import Settings

WORKER_APP = "app.cli.serve:worker_app"


def default_workers(settings: Settings) -> int:
    """Every core, unless the model runs in this process: one copy of it already uses every core."""
    return 1 if settings.engine.kind == "embedded" else os.cpu_count() or 1


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes [default: the number of cores; 1 with the embedded engine].",
)
def serve_cmd(host: str, port: int, workers: int | None) -> None:
    """Run the HTTP service."""
    settings = load_settings()
    refuse_unsafe_production(settings)  # before anything starts (the embedded Postgres included)
    serve(resolve_database_url(settings), host, port, settings, workers=workers or default_workers(settings))


def refuse_unsafe_production(settings: Settings) -> None:
    """Production never serves its metrics to whoever asks: without a token, /metrics would be open."""
    if settings.security.environment == "production" and settings.security.metrics_token is None:
        raise click.ClickException(
            "BILL_ASSISTANT_ENV=production needs METRICS_TOKEN: without it /metrics is open to anyone"
        )


def serve(database_url: str, host: str, port: int, settings: Settings | None = None, *, workers: int = 1) -> None:
    import uvicorn

    from app.api.app import create_app
    from app.inference.drain import CUT_OFF_GRACE_S

    settings = settings or load_settings()
    # Each worker holds up to the per-process budget: the server's total is what Postgres must allow.
    per_process = connection_budget(settings, shared_admission=True if workers > 1 else None).total
    click.echo(
        f"database connections: at most {workers * per_process} "
        f"({workers} worker{'s' if workers > 1 else ''} x {per_process} per process)",
        err=True,
    )
    options: dict[str, Any] = {
        "host": host,
        "port": port,
        "loop": "uvloop",
        "http": "httptools",
        "access_log": False,
        # The client is the first X-Forwarded-For hop from the right that is not a trusted proxy;
        # from any other peer the header is ignored (the request log and the sign-in throttle use it).
        "proxy_headers": True,
        "forwarded_allow_ips": list(settings.security.forwarded_allow_ips),
        "log_level": "warning",
        # Engine requests are cut short at the drain deadline and answered with the deterministic
        # text; after the grace they get to answer and be audited, whatever still runs is cancelled.
        "timeout_graceful_shutdown": math.ceil(settings.admission.drain_timeout_s + CUT_OFF_GRACE_S),
    }
    # uvicorn re-raises SIGTERM/SIGINT after its graceful shutdown, to the handler found at start:
    # make that a normal exit, so exit hooks (the embedded Postgres, the metrics directory) run.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if workers == 1:
        app = create_app(settings, database_url)
        app.on_startup.append(drain_on_signal)
        server = uvicorn.Server(uvicorn.Config(app, **options))
        with contextlib.suppress(KeyboardInterrupt):
            server.run()
        if not server.started:
            sys.exit(3)  # as uvicorn.run: the app did not start (its lifespan failed)
        return

    if settings.admission.scope != "shared":
        if "ADMISSION" in os.environ:
            raise click.UsageError("--workers above 1 needs ADMISSION=shared: each worker is a replica")
        os.environ["ADMISSION"] = "shared"
    # Workers are replicas: a customer token one issues must be accepted by the others. Without a
    # configured secret they share one made here (tokens then die with this server, as in one process).
    os.environ.setdefault("SESSION_SECRET", secrets.token_urlsafe(32))
    # The workers are fresh interpreters: they read their settings from the environment, and the
    # database URL resolved here (the embedded Postgres runs in this process).
    os.environ["DATABASE_URL"] = database_url
    metrics_dir = None
    if "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        metrics_dir = os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="bill-assistant-metrics-")
    try:
        with contextlib.suppress(KeyboardInterrupt):
            uvicorn.run(WORKER_APP, factory=True, workers=workers, **options)
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)


def worker_app() -> Litestar:
    """One worker's app (`--workers` > 1), built in the worker from the environment."""
    from prometheus_client import multiprocess

    from app.api.app import create_app

    app = create_app(load_settings(), os.environ["DATABASE_URL"])
    app.on_startup.append(drain_on_signal)
    # This worker's live gauges (queue depth, requests in flight) leave the scrape with it.
    app.on_shutdown.append(lambda: multiprocess.mark_process_dead(os.getpid()))  # type: ignore[no-untyped-call]
    return app


def drain_on_signal(app: Litestar) -> None:
    """On start-up: SIGTERM/SIGINT starts the drain at once (new work refused, queued work shed,
    engine requests cut short at the deadline), then reaches uvicorn's own handler — whose graceful
    shutdown would otherwise wait for every open request before the app's lifespan could drain."""
    loop = asyncio.get_running_loop()
    drain_s = app.state.settings.admission.drain_timeout_s

    def begin_drain() -> None:
        answers = app.state.get("answers")
        if answers is not None:
            answers.scheduler.close(drain_s)

    for sig in (signal.SIGTERM, signal.SIGINT):
        uvicorns = signal.getsignal(sig)

        def handler(signum: int, frame: FrameType | None, uvicorns: Any = uvicorns) -> None:
            loop.call_soon_threadsafe(begin_drain)
            if callable(uvicorns):
                uvicorns(signum, frame)

        signal.signal(sig, handler)
