"""The `bill-assistant` command: migrate, import, tenants, seed, serve, demo."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import secrets
import signal
import sys
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click
import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from app import demo
from app.data.agents import create_agent, disable_agent, reset_agent
from app.data.database import create_engine, migrate, resolve_database_url
from app.data.importer import import_file, parse
from app.data.tenants import create_tenant, issue_api_key, set_limits, set_policy, tenant_id
from app.domain.policy import TenantPolicy
from app.errors import AlreadyExists, ImportRejected
from app.settings import Settings, get_settings

T = TypeVar("T")


def _database_url() -> str:
    return resolve_database_url(get_settings())


def _in_transaction(work: Callable[[AsyncConnection], Awaitable[T]]) -> T:
    """Run work in one transaction: everything it writes lands, or nothing does."""

    async def run() -> T:
        engine = create_engine(_database_url())
        try:
            async with engine.begin() as conn:
                return await work(conn)
        finally:
            await engine.dispose()

    return asyncio.run(run())


@click.group()
def main() -> None:
    """Bill Assistant: explains bank bills with exact numbers."""


@main.command("migrate")
def migrate_cmd() -> None:
    """Apply database migrations (DATABASE_URL, or the embedded Postgres when unset)."""
    migrate(_database_url())
    click.echo("database is up to date")


@main.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def import_cmd(file: Path) -> None:
    """Import customers, accounts, statements and transactions from a JSON file."""
    try:
        doc = parse(file.read_bytes())
        report = _in_transaction(lambda conn: import_file(conn, doc))
    except ImportRejected as exc:
        raise click.ClickException(f"{file}: rejected, nothing was imported: {exc}") from None
    click.echo(report.summary())


@main.group()
def tenants() -> None:
    """Manage tenants (banks) and their API keys."""


@tenants.command("create")
@click.argument("slug")
@click.option("--name", required=True, help="The bank's display name.")
@click.option(
    "--priority-class",
    type=click.Choice(["interactive", "standard", "batch"]),
    default="standard",
    show_default=True,
)
def tenants_create(slug: str, name: str, priority_class: str) -> None:
    """Create a tenant and print its new API key (shown once, on the last line)."""

    async def work(conn: AsyncConnection) -> str:
        return await issue_api_key(conn, await create_tenant(conn, slug, name, priority_class), "initial")

    try:
        key = _in_transaction(work)
    except AlreadyExists as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"created tenant {slug} ({priority_class}); its API key, shown only now:")
    click.echo(key)


@tenants.command("set")
@click.argument("slug")
@click.option("--priority-class", type=click.Choice(["interactive", "standard", "batch"]))
@click.option("--weight", type=click.IntRange(min=1), help="Share of the engine within a priority level.")
@click.option("--max-concurrency", type=click.IntRange(min=1), help="Requests in the engine at once.")
@click.option("--rate-limit", type=click.FloatRange(min=0.01), help="Sustained requests per second.")
def tenants_set(
    slug: str, priority_class: str | None, weight: int | None, max_concurrency: int | None, rate_limit: float | None
) -> None:
    """Show or change a tenant's priority class and admission limits (live within API_KEY_CACHE_TTL)."""
    changes = {"priority_class": priority_class, "weight": weight, "max_concurrency": max_concurrency,
               "rate_limit_per_s": rate_limit}  # fmt: skip

    async def work(conn: AsyncConnection) -> dict[str, Any]:
        return await set_limits(conn, slug, {k: v for k, v in changes.items() if v is not None})

    try:
        limits = _in_transaction(work)
    except LookupError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(msgspec.json.encode(limits).decode())


@tenants.command("issue-key")
@click.argument("slug")
@click.option("--label", default="", help="A note to tell keys apart.")
def tenants_issue_key(slug: str, label: str) -> None:
    """Issue another API key for a tenant (printed once, on the last line)."""

    async def work(conn: AsyncConnection) -> str:
        tenant = await tenant_id(conn, slug)
        if tenant is None:
            raise click.ClickException(f"unknown tenant {slug!r}")
        return await issue_api_key(conn, tenant, label)

    click.echo(_in_transaction(work))


@tenants.command("policy")
@click.argument("slug")
@click.option("--brand", help="The name the assistant speaks for (default: the tenant's name).")
@click.option("--tone", help='How it speaks, e.g. "warm, clear and concise".')
@click.option("--forbid", multiple=True, help="Something it must never do; repeat for each (replaces the list).")
def tenants_policy(slug: str, brand: str | None, tone: str | None, forbid: tuple[str, ...]) -> None:
    """Show or change what a tenant's assistant says and may not do (part of every prompt)."""
    changes: dict[str, Any] = {"brand": brand, "tone": tone, "forbidden": list(forbid) or None}

    async def work(conn: AsyncConnection) -> TenantPolicy:
        return await set_policy(conn, slug, {k: v for k, v in changes.items() if v is not None})

    try:
        policy = _in_transaction(work)
    except LookupError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(msgspec.json.format(msgspec.json.encode(policy)).decode())


@main.group()
def agents() -> None:
    """Manage the bank employees who sign in to the agent console (/console)."""


async def _known_tenant(conn: AsyncConnection, slug: str) -> int:
    tenant = await tenant_id(conn, slug)
    if tenant is None:
        raise click.ClickException(f"unknown tenant {slug!r}")
    return tenant


@agents.command("create")
@click.option("--tenant", "slug", required=True, help="The bank (tenant slug) the agent works for.")
@click.option("--username", required=True, help="What the agent signs in with (unique within the bank).")
@click.option("--name", "display_name", default="", help="Shown in the console (default: the username).")
@click.option("--password-stdin", is_flag=True, help="Read the password from the first line of stdin.")
def agents_create(slug: str, username: str, display_name: str, password_stdin: bool) -> None:
    """Create a console agent; the password is asked for (hidden, twice) or read from stdin."""
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)

    async def work(conn: AsyncConnection) -> int:
        return await create_agent(conn, await _known_tenant(conn, slug), username, display_name, password)

    try:
        _in_transaction(work)
    except ValueError as exc:  # a taken username, a short password
        raise click.ClickException(str(exc)) from None
    click.echo(f"created agent {username} in {slug}: sign in at /console")


@agents.command("disable")
@click.option("--tenant", "slug", required=True)
@click.option("--username", required=True)
def agents_disable(slug: str, username: str) -> None:
    """Refuse an agent's sign-ins from now on and end its console sessions."""

    async def work(conn: AsyncConnection) -> bool:
        return await disable_agent(conn, await _known_tenant(conn, slug), username)

    if not _in_transaction(work):
        raise click.ClickException(f"no agent {username!r} in {slug}")
    click.echo(f"disabled agent {username} in {slug}")


DEMO_AGENT = "agent"


async def demo_agents(conn: AsyncConnection) -> dict[str, str]:
    """The demo agent of each demo tenant, with a new password (by slug) each time the demo starts."""
    passwords: dict[str, str] = {}
    for tenant in demo.TENANTS:
        found = await tenant_id(conn, tenant.slug)
        if found is not None:
            passwords[tenant.slug] = secrets.token_urlsafe(12)
            await reset_agent(conn, found, DEMO_AGENT, f"Demo agent ({tenant.name})", passwords[tenant.slug])
    return passwords


async def _seed(conn: AsyncConnection, seed: int, customers: int) -> dict[str, str]:
    """Create the demo tenants that are missing and import their data; return new keys by slug."""
    keys: dict[str, str] = {}
    for tenant in demo.TENANTS:
        if await tenant_id(conn, tenant.slug) is None:
            new = await create_tenant(conn, tenant.slug, tenant.name, tenant.priority_class, {"tone": tenant.tone})
            keys[tenant.slug] = await issue_api_key(conn, new, "demo")
        doc = parse(msgspec.json.encode(demo.generate(tenant, customers=customers, seed=seed)))
        report = await import_file(conn, doc)
        click.echo(report.summary())
    return keys


@main.command("seed")
@click.option("--seed", default=7, show_default=True, help="Same seed, same data.")
@click.option("--customers", default=150, show_default=True, help="Customers per demo tenant.")
def seed_cmd(seed: int, customers: int) -> None:
    """Create two demo banks with realistic statements in English and Chinese."""
    for slug, key in _in_transaction(lambda conn: _seed(conn, seed, customers)).items():
        click.echo(f"API key of new tenant {slug}: {key}")


@main.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True)
def serve_cmd(host: str, port: int) -> None:
    """Run the HTTP service."""
    _serve(_database_url(), host, port)


@main.command("demo")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True)
def demo_cmd(host: str, port: int) -> None:
    """Run the service on embedded defaults with demo data, and show how to call it."""
    url = _database_url()
    migrate(url)

    async def prepare(conn: AsyncConnection) -> tuple[str, dict[str, str]]:
        if await tenant_id(conn, demo.TENANTS[0].slug) is None:
            await _seed(conn, seed=7, customers=150)
        tenant = await tenant_id(conn, demo.TENANTS[0].slug)
        assert tenant is not None
        return await issue_api_key(conn, tenant, "demo session"), await demo_agents(conn)

    key, passwords = _in_transaction(prepare)
    base = f"http://{host}:{port}"
    logins = "".join(f"\n  bank {slug}, username {DEMO_AGENT}, password {pw}" for slug, pw in passwords.items())
    click.echo(
        f"\nBill Assistant on {base}  (OpenAPI: {base}/schema)\nTry:\n"
        f"  curl -s {base}/v1/explanations -H 'Authorization: Bearer {key}' "
        "-H 'Content-Type: application/json' "
        '-d \'{"account_ref": "A-1001", "question": "Why is my bill higher than last month?"}\'\n'
        f"Chat widget on a demo bank page: {base}/demo  (?bank=jade-river for the Chinese-speaking bank)\n"
        f"Agent console: {base}/console  (new passwords each run){logins}\n"
    )
    # The demo page is for the demo only; plain HTTP here, so console cookies cannot require HTTPS
    # (unless COOKIE_SECURE is set explicitly).
    settings = get_settings()
    settings = dataclasses.replace(
        settings, demo_page=True, cookie_secure="COOKIE_SECURE" in os.environ and settings.cookie_secure
    )
    _serve(url, host, port, settings)


@main.command("precompute")
@click.option("--days", default=45, show_default=True, help="Statements that closed within this many days.")
@click.option("--tenant", help="Only this tenant (slug).")
@click.option("--today", type=click.DateTime(["%Y-%m-%d"]), help="The as-of date (default: today).")
def precompute_cmd(days: int, tenant: str | None, today: Any) -> None:
    """Answer recent statements' bill-change question ahead of time, at batch priority, into the cache."""
    from datetime import date

    from rich.progress import Progress

    from app.answers.precompute import precompute, wanted
    from app.inference.factory import build_engine
    from app.inference.scheduler import Scheduler

    settings = get_settings()
    as_of = today.date() if today else date.today()

    async def run() -> Counter[str]:
        llm = build_engine(settings)
        if llm is None:
            raise click.ClickException("precomputing needs an engine: ENGINE is off")
        db = create_engine(_database_url(), settings)
        sources: Counter[str] = Counter()
        try:
            todo = await wanted(db, llm.model, as_of, days, tenant)
            with Progress() as progress:
                bar = progress.add_task(f"precomputing {len(todo)} answers", total=len(todo))

                def done(answer: Any) -> None:
                    sources[answer.source] += 1
                    progress.advance(bar)

                scheduler = Scheduler(capacity=settings.engine_capacity)
                await precompute(db, llm, scheduler, settings, todo, as_of, on_done=done)
        finally:
            await llm.close()
            await db.dispose()
        return sources

    sources = asyncio.run(run())
    click.echo(
        f"{sum(sources.values())} statements answered: {sources['model']} validated and cached, "
        f"{sources['fallback']} fell back (not cached), {sources['cache']} already cached"
    )


@main.group()
def traffic() -> None:
    """Realistic traffic files for replay."""


@traffic.command("generate")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--duration", default=60.0, show_default=True, help="Seconds of traffic.")
@click.option("--rate", default=2.0, show_default=True, help="Mean requests per second.")
@click.option("--process", type=click.Choice(["poisson", "bursty"]), default="poisson", show_default=True)
@click.option("--tenants", default=",".join(t.slug for t in demo.TENANTS), show_default=True)
@click.option("--batch-share", default=0.2, show_default=True, help="Share of requests on the batch channel.")
@click.option("--widget-share", default=0.3, show_default=True, help="Share of requests from the chat widget.")
@click.option("--seed", default=7, show_default=True)
def traffic_generate(
    out: Path,
    duration: float,
    rate: float,
    process: str,
    tenants: str,
    batch_share: float,
    widget_share: float,
    seed: int,
) -> None:
    """Write a JSONL traffic file from the seeded accounts: tenants, channels, both locales, the question mix."""
    from app.replay.traffic import dumps, generate, population

    people = _in_transaction(lambda conn: population(conn, tenants.split(",")))
    if not people:
        raise click.ClickException(f"no accounts for tenants {tenants}: run `bill-assistant seed` first")
    arrivals = generate(
        people,
        rate=rate,
        duration_s=duration,
        process=process,
        batch_share=batch_share,
        widget_share=widget_share,
        seed=seed,
    )
    out.write_bytes(dumps(arrivals))
    click.echo(f"{len(arrivals)} requests over {duration:g} s ({process}) written to {out}")


@main.command("replay")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--target", required=True, help="Base URL of the service, e.g. http://127.0.0.1:8000")
@click.option("--compare", help="A second target: the same traffic is replayed there too, side by side.")
@click.option("--key", "keys", multiple=True, help="SLUG=API_KEY for each tenant in the file.")
@click.option("--speed", default=1.0, show_default=True, help="Replay rate multiplier (2 = twice as fast).")
@click.option("--slo-ttft-ms", default=2000.0, show_default=True)
@click.option("--slo-e2e-ms", default=5000.0, show_default=True)
@click.option("--report", type=click.Path(dir_okay=False, path_type=Path), help="Write a self-contained HTML report.")
def replay_cmd(
    file: Path,
    target: str,
    compare: str | None,
    keys: tuple[str, ...],
    speed: float,
    slo_ttft_ms: float,
    slo_e2e_ms: float,
    report: Path | None,
) -> None:
    """Replay a traffic file open-loop and report latency per tenant and channel."""
    from rich.progress import Progress, TaskID

    from app.replay.report import Row, Slo, html_report, summarize, table
    from app.replay.run import Sample, replay
    from app.replay.traffic import loads

    arrivals = loads(file.read_bytes())
    key_map = dict(k.split("=", 1) for k in keys)
    if missing := {a.tenant for a in arrivals} - key_map.keys():
        raise click.ClickException(f"no --key for tenants: {', '.join(sorted(missing))}")
    slo = Slo(ttft_ms=slo_ttft_ms, e2e_ms=slo_e2e_ms)
    runs: dict[str, tuple[Sequence[Sample], list[Row]]] = {}
    for url in [target] + ([compare] if compare else []):
        with Progress() as progress:
            bar = progress.add_task(f"replaying on {url}", total=len(arrivals))

            def advance(_: Sample, progress: Progress = progress, bar: TaskID = bar) -> None:
                progress.advance(bar)

            samples = asyncio.run(replay(arrivals, url, key_map, speed=speed, on_done=advance))
        runs[url] = (samples, summarize(samples, slo))
        click.echo(table(runs[url][1], title=f"{url}  ({len(arrivals)} requests, speed {speed:g}x; ms)"))
    if report:
        report.write_text(html_report(runs, slo, f"Replay of {file.name}"), encoding="utf-8")
        click.echo(f"report written to {report}")


def _serve(database_url: str, host: str, port: int, settings: Settings | None = None) -> None:
    import uvicorn

    from app.api.app import create_app

    app = create_app(settings or get_settings(), database_url)
    # uvicorn drains in-flight requests on SIGTERM/SIGINT, then re-raises the signal to the handler
    # found at start: make that a normal exit, so exit hooks (the embedded Postgres) run.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.run(app, host=host, port=port, loop="uvloop", http="httptools", access_log=False, log_level="warning")


if __name__ == "__main__":
    sys.exit(main())
