"""What every command shares: the checked settings, the database URL, one transaction per command.

SQLAlchemy is imported by the commands that use it, when they run: a nightly `import` of CSV files
works on one driver connection (`in_driver_transaction`) and starts without it (about 0.45 s)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

import asyncpg
import click

from app.data.connecting import connect, resolve_database_url
from app.settings import Settings, SettingsError

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

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
    from app.data.database import create_engine

    async def run() -> T:
        engine = create_engine(database_url(), load_settings())  # its pool size and pooler
        try:
            async with engine.begin() as conn:
                return await work(conn)
        finally:
            await engine.dispose()

    return asyncio.run(run())


def in_driver_transaction(work: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
    """Run work in one transaction on a connection of the driver's own: all of it lands, or nothing."""

    async def run() -> T:
        conn = await connect(database_url(), load_settings())
        try:
            async with conn.transaction():
                return await work(conn)
        finally:
            await conn.close()

    return asyncio.run(run())


async def known_tenant(conn: AsyncConnection, slug: str) -> int:
    from app.data.tenants import tenant_id

    tenant = await tenant_id(conn, slug)
    if tenant is None:
        raise click.ClickException(f"unknown tenant {slug!r}")
    return tenant
