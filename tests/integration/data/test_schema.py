"""The migrations and the models describe the same schema."""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.ext.asyncio import AsyncEngine

from app.data.models import Base


async def test_migrated_database_matches_the_models(engine: AsyncEngine) -> None:
    def diff(sync_conn: Any) -> list[Any]:
        context = MigrationContext.configure(sync_conn, opts={"compare_type": True})
        return list(compare_metadata(context, Base.metadata))

    async with engine.connect() as conn:
        assert await conn.run_sync(diff) == []
