"""`seed` and `demo`: the demo banks, their data and console agents, and the service on them."""

from __future__ import annotations

import os
import secrets

import click
import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from app import demo
from app.cli.common import database_url, in_transaction
from app.cli.serve import serve
from app.data.agents import reset_agent
from app.data.database import migrate
from app.data.import_format import parse
from app.data.importer import import_file
from app.data.knowledge import import_library
from app.data.tenants import create_tenant, issue_api_key, tenant_id
from app.domain.knowledge import parse_library
from app.settings import Settings

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
        found = await tenant_id(conn, tenant.slug)
        assert found is not None
        articles = parse_library(demo.library(tenant))
        loaded = await import_library(conn, found, articles)
        click.echo(f"{tenant.slug}: help library of {len(articles)} articles, {loaded.created + loaded.changed} loaded")
    return keys


@click.command("seed")
@click.option("--seed", default=7, show_default=True, help="Same seed, same data.")
@click.option("--customers", default=150, show_default=True, help="Customers per demo tenant.")
def seed_cmd(seed: int, customers: int) -> None:
    """Create two demo banks with realistic statements in English and Chinese."""
    for slug, key in in_transaction(lambda conn: _seed(conn, seed, customers)).items():
        click.echo(f"API key of new tenant {slug}: {key}")


@click.command("demo")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True)
def demo_cmd(host: str, port: int) -> None:
    """Run the service on embedded defaults with demo data, and show how to call it."""
    url = database_url()
    migrate(url)

    async def prepare(conn: AsyncConnection) -> tuple[str, dict[str, str]]:
        if await tenant_id(conn, demo.TENANTS[0].slug) is None:
            await _seed(conn, seed=7, customers=150)
        tenant = await tenant_id(conn, demo.TENANTS[0].slug)
        assert tenant is not None
        return await issue_api_key(conn, tenant, "demo session"), await demo_agents(conn)

    key, passwords = in_transaction(prepare)
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
    # (unless COOKIE_SECURE is set explicitly: the environment wins over these defaults).
    settings = Settings.from_env({**os.environ, "DEMO_PAGE": "1"}, defaults={"COOKIE_SECURE": "0"})
    serve(url, host, port, settings)
