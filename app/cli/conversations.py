"""`conversations purge`: the retention of widget conversations (CONVERSATION_RETENTION_DAYS)."""

from __future__ import annotations

from datetime import timedelta

import click

from app.cli.common import in_transaction, load_settings


@click.group("conversations")
def conversations() -> None:
    """The widget's conversations."""


@conversations.command("purge")
@click.option("--older-than", "days", type=click.IntRange(min=0), help="Days (default: CONVERSATION_RETENTION_DAYS).")
def purge_cmd(days: int | None) -> None:
    """Delete the conversations with no message for longer than the retention (their messages too)."""
    from app.conversations.service import purge

    age = timedelta(days=load_settings().conversations.retention_days if days is None else days)
    deleted = in_transaction(lambda conn: purge(conn, age))
    click.echo(f"deleted {deleted} conversations with no message for {age.days} days")
