"""A line's account is kept by statement-level triggers (migration 0024), as the foreign key kept it:
a line names a stored account of its tenant, an account's deletion takes its lines, its key does not
change under them, and a writer's accounts cannot be deleted until it commits."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

_INSERT = text(
    "INSERT INTO transactions (tenant_id, account_id, ref, posted_on, kind, amount)"
    " VALUES (:t, :a, :ref, DATE '2026-05-02', 'purchase', 5.00)"
)


async def _account(engine: AsyncEngine, tenant: Any) -> int:
    async with engine.connect() as conn:
        query = text("SELECT id FROM accounts WHERE tenant_id = :t AND ref = 'A-1'")
        return int((await conn.execute(query, {"t": tenant.id})).scalar_one())


async def _lines(engine: AsyncEngine, account_id: int) -> int:
    async with engine.connect() as conn:
        query = text("SELECT count(*) FROM transactions WHERE account_id = :a")
        return int((await conn.execute(query, {"a": account_id})).scalar_one())


def _violation(exc: pytest.ExceptionInfo[DBAPIError]) -> asyncpg.PostgresError:
    assert exc.value.orig is not None
    cause = exc.value.orig.__cause__  # SQLAlchemy's adapted error wraps asyncpg's
    assert isinstance(cause, asyncpg.ForeignKeyViolationError)
    return cause


async def test_a_line_must_name_an_account_of_its_tenant(engine: AsyncEngine, bank: Any, make_tenant: Any) -> None:
    other = await make_tenant()
    account_id = await _account(engine, bank)
    before = await _lines(engine, account_id)
    with pytest.raises(DBAPIError) as raised:  # the account of another tenant
        async with engine.begin() as conn:
            await conn.execute(_INSERT, {"t": other.id, "a": account_id, "ref": "T-other-tenant"})
    assert _violation(raised).constraint_name == "fk_transactions_tenant_id_account_id_accounts"
    async with engine.begin() as conn:
        await conn.execute(_INSERT, {"t": bank.id, "a": account_id, "ref": "T-ok"})
    assert await _lines(engine, account_id) == before + 1
    with pytest.raises(DBAPIError) as raised:  # an update that moves a line to no account
        async with engine.begin() as conn:
            await conn.execute(text("UPDATE transactions SET account_id = -1 WHERE account_id = :a"), {"a": account_id})
    assert "is not present" in str(_violation(raised).detail)
    assert await _lines(engine, account_id) == before + 1


async def test_deleting_an_account_deletes_its_lines_and_its_key_stays(engine: AsyncEngine, bank: Any) -> None:
    account_id = await _account(engine, bank)
    assert await _lines(engine, account_id) > 0
    with pytest.raises(DBAPIError) as raised:
        async with engine.begin() as conn:
            await conn.execute(text("UPDATE accounts SET id = id + 1000000 WHERE id = :a"), {"a": account_id})
    _violation(raised)
    statements = text(
        "SELECT count(*) FROM statements s JOIN statement_summaries ss ON ss.statement_id = s.id"
        " WHERE s.account_id = :a"
    )
    async with engine.connect() as conn:
        assert (await conn.execute(statements, {"a": account_id})).scalar_one() > 0
    async with engine.begin() as conn:  # the tenant's deletion cascades to its accounts, then their lines,
        await conn.execute(text("DELETE FROM tenants WHERE id = :t"), {"t": bank.id})  # statements, summaries
    assert await _lines(engine, account_id) == 0
    async with engine.connect() as conn:
        assert (await conn.execute(statements, {"a": account_id})).scalar_one() == 0
        assert (
            await conn.execute(text("SELECT count(*) FROM statement_summaries WHERE tenant_id = :t"), {"t": bank.id})
        ).scalar_one() == 0


async def test_a_writers_account_cannot_be_deleted_before_it_commits(engine: AsyncEngine, bank: Any) -> None:
    account_id = await _account(engine, bank)
    async with engine.connect() as writer, engine.connect() as deleter:
        await writer.begin()
        await writer.execute(_INSERT, {"t": bank.id, "a": account_id, "ref": "T-in-flight"})
        await deleter.begin()
        await deleter.execute(text("SET LOCAL lock_timeout = '300ms'"))
        with pytest.raises(DBAPIError, match="lock timeout"):
            await deleter.execute(text("DELETE FROM accounts WHERE id = :a"), {"a": account_id})
        await deleter.rollback()
        await writer.commit()
    assert await _lines(engine, account_id) > 0
