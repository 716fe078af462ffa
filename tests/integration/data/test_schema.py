"""The migrations and the models describe the same schema."""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import CheckConstraint, text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.data.models import Base


async def test_migrated_database_matches_the_models(engine: AsyncEngine) -> None:
    def diff(sync_conn: Any) -> list[Any]:
        context = MigrationContext.configure(sync_conn, opts={"compare_type": True})
        return list(compare_metadata(context, Base.metadata))

    async with engine.connect() as conn:
        assert await conn.run_sync(diff) == []


async def test_no_check_names_the_locales(engine: AsyncEngine) -> None:
    """Which locales exist is the folders' to say (app/locales.py, migration 0023): a locale column
    takes any well-formed locale, the application refusing one without a folder."""
    async with engine.connect() as conn:
        checks = (await conn.execute(text("SELECT conname FROM pg_constraint WHERE contype = 'c'"))).scalars().all()
    assert [name for name in checks if name.endswith("_locale")] == []
    assert [
        c.name
        for table in Base.metadata.tables.values()
        for c in table.constraints
        if isinstance(c, CheckConstraint) and str(c.name).endswith("_locale")
    ] == []
