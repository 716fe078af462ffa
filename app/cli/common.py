"""What every command shares: the checked settings, the database URL, one transaction per command."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import click
from sqlalchemy.ext.asyncio import AsyncConnection

from app.data.database import create_engine, resolve_database_url
from app.data.tenants import tenant_id
from app.settings import Settings, SettingsError

T = TypeVar("T")


def load_settings() -> Settings:
    """The service's settings; a variable it cannot run with ends the command with its one-line message."""
    try:
        return Settings.from_env()
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from None


def database_url() -> str:
    return resolve_database_url(load_settings())


def in_transaction(work: Callable[[AsyncConnection], Awaitable[T]]) -> T:
    """Run work in one transaction: everything it writes lands, or nothing does."""

    async def run() -> T:
        engine = create_engine(database_url(), load_settings())  # its pool size and pooler
        try:
            async with engine.begin() as conn:
                return await work(conn)
        finally:
            await engine.dispose()

    return asyncio.run(run())


async def known_tenant(conn: AsyncConnection, slug: str) -> int:
    tenant = await tenant_id(conn, slug)
    if tenant is None:
        raise click.ClickException(f"unknown tenant {slug!r}")
    return tenant
