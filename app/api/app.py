"""Builds the Litestar application: one place that wires plugins, routes and error handling."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict
from typing import Any

import msgspec
import structlog
from advanced_alchemy.extensions.litestar import EngineConfig, SQLAlchemyAsyncConfig, SQLAlchemyPlugin
from litestar import Litestar
from litestar.config.cors import CORSConfig
from litestar.datastructures import State
from litestar.di import Provide
from litestar.logging.config import LoggingConfig, StructlogEventFilter, StructLoggingConfig
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.plugins.structlog import StructlogConfig, StructlogPlugin
from litestar.static_files import create_static_files_router
from litestar.template.config import TemplateConfig
from litestar.types import Message, Scope

from app.answers.batch import BatchWorker
from app.answers.cache_fill import CacheFiller
from app.answers.service import AnswerService
from app.api.auth import KeyCache
from app.api.body import MAX_BODY_BYTES
from app.api.chat import ChatController
from app.api.console.handover import HandoverController
from app.api.console.library import LibraryController
from app.api.console.routes import ConsoleController
from app.api.conversation_feed import Wakeups
from app.api.customer_session import SessionController
from app.api.demo import demo_page
from app.api.errors import EXCEPTION_HANDLERS
from app.api.explanations import ExplanationController
from app.api.health import health, ready
from app.api.home import favicon, home
from app.api.jobs import JobController
from app.api.metrics import MetricsController
from app.api.openapi import OPENAPI_PLUGINS, openapi_config
from app.api.overload import LagMonitor, Limiter, OverloadMiddleware
from app.api.request_log import RequestLogMiddleware
from app.api.words import words, words_script
from app.data.admission import PostgresLedger
from app.data.connecting import asyncpg_url, driver_options
from app.data.database import connection_budget, engine_options, watch_connections
from app.data.search_text import load_segmenter
from app.inference.drain import CUT_OFF_GRACE_S
from app.metrics import scheduler_hooks
from app.prompts import load_templates
from app.settings import PROJECT_ROOT, Settings

WEB = PROJECT_ROOT / "app" / "web"  # server-rendered pages (templates/) and the widget's files (static/)


def _freeze_startup_objects() -> None:
    # Everything built at start-up lives as long as the process: keep it out of the garbage
    # collector's full passes, which otherwise show up as latency spikes under load.
    gc.collect()
    gc.freeze()


async def _nosniff(message: Message, scope: Scope) -> None:
    """Every response, an error or a stream as much as a page, is read as the type it says it is:
    a browser must not sniff a text/event-stream or a JSON error into script or HTML. (A hook
    before each message is sent: it sees the router's own 404 and 405 too, which no middleware does.)"""
    if message["type"] == "http.response.start":
        headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"x-content-type-options"]
        message["headers"] = [*headers, (b"x-content-type-options", b"nosniff")]


def _json_bytes(event: dict[str, Any], **_: Any) -> bytes:
    # Litestar's structlog logger writes bytes; anything msgspec cannot encode is logged as str.
    return msgspec.json.encode(event, enc_hook=str)


def _json_text(event: dict[str, Any], **_: Any) -> str:
    return _json_bytes(event).decode()


def _stdlib_logging() -> LoggingConfig:
    """Records of the standard library's loggers (uvicorn, asyncio, asyncpg, SQLAlchemy) rendered as
    ours. Litestar's default renders a record's `exc_info` as it is, and an exception class (an
    asyncpg error's: PostgresMessageMeta) cannot be encoded: the record was lost. These format the
    traceback first, and anything else msgspec cannot encode is logged as str."""
    processors: list[structlog.types.Processor] = [
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.stdlib.add_log_level,
        structlog.stdlib.ExtraAdder(),
        StructlogEventFilter(["color_message"]),  # uvicorn's copy of the message with colour codes
        structlog.stdlib.ProcessorFormatter.remove_processors_meta,
        structlog.processors.format_exc_info,
        structlog.processors.JSONRenderer(serializer=_json_text),
    ]
    return LoggingConfig(
        formatters={"standard": {"()": structlog.stdlib.ProcessorFormatter, "processors": processors}},
        # httpx logs each request at INFO (the engines' clients: a line per health check, per answer).
        loggers={"httpx": {"level": "WARNING"}},
    )


def _structlog(settings: Settings) -> StructlogPlugin:
    processors: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
        structlog.processors.JSONRenderer(serializer=_json_bytes),
    ]
    return StructlogPlugin(
        StructlogConfig(
            structlog_logging_config=StructLoggingConfig(
                processors=processors,
                standard_lib_logging_config=_stdlib_logging(),
                wrapper_class=structlog.make_filtering_bound_logger(
                    logging.getLevelNamesMapping()[settings.logs.level]
                ),
                log_exceptions="never",  # our error handler logs them once, with the route
                # A few microseconds a call, and structlog.testing.capture_logs sees every logger.
                cache_logger_on_first_use=False,
                pretty_print_tty=False,
            ),
            enable_middleware_logging=False,  # RequestLogMiddleware logs one event per request instead
        )
    )


@asynccontextmanager
async def _answers_lifespan(app: Litestar) -> AsyncIterator[None]:
    """The answer service lives as long as the app, built once around the pool, the engine (a
    model load) and the admission scheduler; on shutdown new work is refused, running work drains
    (engine requests are cut short at the drain deadline: `serve` starts the drain as soon as the
    signal comes, this keeps its deadline), then the engine closes."""
    settings: Settings = app.state.settings
    db: SQLAlchemyAsyncConfig = app.state.db_config
    budget = connection_budget(settings)
    structlog.get_logger("bill_assistant").info(
        f"database connections: at most {budget.total} per process",
        **asdict(budget),
        pooler=settings.database.pooler,
    )
    ledger = None
    if settings.admission.scope == "shared":
        url = db.get_engine().url.render_as_string(hide_password=False)
        ledger = PostgresLedger(url, pool_size=settings.database.admission_pool_size, options=driver_options(settings))
        await ledger.open()
    answers = AnswerService.build(db.get_engine(), settings, scheduler_hooks(), ledger)
    app.state.answers = answers
    try:
        yield
    finally:
        await _stop_answers(answers, ledger, settings)


async def _stop_answers(answers: AnswerService, ledger: PostgresLedger | None, settings: Settings) -> None:
    log = structlog.get_logger("bill_assistant")
    try:
        await answers.scheduler.shutdown(settings.admission.drain_timeout_s)
    except TimeoutError:
        log.warning("shutdown: in-flight requests did not finish in time")
    if answers.llm is not None:
        # Bounded: a hung engine may not answer the aborts either, and the process must still end.
        try:
            await asyncio.wait_for(answers.llm.close(), CUT_OFF_GRACE_S)
        except TimeoutError:
            log.warning("shutdown: the engine did not close in time")
    await answers.pool.close()
    if ledger is not None:
        await ledger.close()


async def _start_batch_worker(app: Litestar) -> None:
    """After every lifespan manager has started (the database pool among them): the batch worker,
    and the scheduled fill of the answer cache when set and there is an engine."""
    settings: Settings = app.state.settings
    if settings.batch.worker:
        app.state.batch_worker = asyncio.create_task(BatchWorker(app.state.answers).run_forever())
    if settings.cache.fill_interval_s and app.state.answers.llm is not None:
        filler = CacheFiller(app.state.answers, interval_s=settings.cache.fill_interval_s)
        app.state.cache_filler = asyncio.create_task(filler.run_forever())


async def _shutdown(app: Litestar) -> None:
    """Last, after every lifespan manager: stop the batch worker and the cache fill, then close the pool. (The plugin's
    own clean-up looks the engine up under another state key than the one it stored it under, so
    it never closes it; a process that builds several apps, like the tests, would keep every pool.)"""
    for name in ("batch_worker", "cache_filler"):
        task: asyncio.Task[None] | None = app.state.get(name)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    db: SQLAlchemyAsyncConfig = app.state.db_config
    await db.get_engine().dispose()


def create_app(settings: Settings, database_url: str) -> Litestar:
    db = SQLAlchemyAsyncConfig(
        connection_string=asyncpg_url(database_url),
        engine_config=EngineConfig(**engine_options(settings)),  # bounded connects
        create_all=False,  # the schema is Alembic's job
    )
    watch_connections(db.get_engine())  # connections checked at checkout
    key_cache = KeyCache(settings.security.api_key_cache_ttl)
    limiter = Limiter(
        max_in_flight=settings.admission.max_in_flight,
        max_lag_s=settings.admission.max_loop_lag_ms / 1000,
        monitor=LagMonitor(),
    )
    # Browsers on the banks' own sites call the chat API with a bearer token, never a cookie.
    cors = CORSConfig(
        allow_origins=list(settings.security.widget_origins),
        allow_methods=["GET", "POST"],
        allow_headers=["Authorization", "Content-Type"],
        expose_headers=["Retry-After", "Server-Timing"],
    )
    return Litestar(
        route_handlers=[
            home,
            favicon,
            *([demo_page] if settings.demo.page else []),
            health,
            ready,
            ExplanationController,
            JobController,
            SessionController,
            ChatController,
            words,
            words_script,
            ConsoleController,
            HandoverController,
            LibraryController,
            MetricsController,
            create_static_files_router("/static", [WEB / "static"], include_in_schema=False),
        ],
        plugins=[SQLAlchemyPlugin(config=db), _structlog(settings), *OPENAPI_PLUGINS],
        lifespan=[_answers_lifespan, limiter.lifespan],
        dependencies={
            "settings": Provide(lambda: settings, use_cache=True, sync_to_thread=False),
            "key_cache": Provide(lambda: key_cache, use_cache=True, sync_to_thread=False),
        },
        state=State(
            {"settings": settings, "db_config": db, "limiter": limiter, "key_cache": key_cache, "wakeups": Wakeups()}
        ),
        # The overload guard inside the request log, so a refused request is logged (status 503).
        middleware=[RequestLogMiddleware(), OverloadMiddleware(limiter)],
        request_max_body_size=MAX_BODY_BYTES,  # larger bodies: 413
        cors_config=cors if settings.security.widget_origins else None,
        on_startup=[load_templates, load_segmenter, _start_batch_worker, _freeze_startup_objects],
        on_shutdown=[_shutdown],
        exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
        before_send=[_nosniff],
        template_config=TemplateConfig(directory=WEB / "templates", engine=JinjaTemplateEngine),
        openapi_config=openapi_config(),
    )
