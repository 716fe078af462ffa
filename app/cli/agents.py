"""`agents`: the bank employees who sign in to the agent console."""

from __future__ import annotations

import sys

import click
from sqlalchemy.ext.asyncio import AsyncConnection

from app.cli.common import in_transaction, known_tenant
from app.data.agents import create_agent, disable_agent


@click.group()
def agents() -> None:
    """Manage the bank employees who sign in to the agent console (/console)."""


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
        return await create_agent(conn, await known_tenant(conn, slug), username, display_name, password)

    try:
        in_transaction(work)
    except ValueError as exc:  # a taken username, a short password
        raise click.ClickException(str(exc)) from None
    click.echo(f"created agent {username} in {slug}: sign in at /console")


@agents.command("disable")
@click.option("--tenant", "slug", required=True)
@click.option("--username", required=True)
def agents_disable(slug: str, username: str) -> None:
    """Refuse an agent's sign-ins from now on and end its console sessions."""

    async def work(conn: AsyncConnection) -> bool:
        return await disable_agent(conn, await known_tenant(conn, slug), username)

    if not in_transaction(work):
        raise click.ClickException(f"no agent {username!r} in {slug}")
    click.echo(f"disabled agent {username} in {slug}")
