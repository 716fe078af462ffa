"""Which statement summaries a change rebuilds (migration 0019): exactly those whose period holds a
changed line, however far apart the changed lines are, and none for a data-version bump alone. A
summary row that was not rebuilt keeps its row version (xmin)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.data.connecting import connect
from app.data.csv_import import load_csv
from app.data.staging import Counts
from tests.factories import account, customer, document, load_files, statement, tx, write_csv

MONTHS = [f"2026-{m:02d}" for m in range(1, 7)]
ENDS = ["31", "28", "31", "30", "31", "30"]


async def _versions(engine: AsyncEngine, tenant_id: int) -> dict[str, str]:
    """Each statement's period start: its summary's row version."""
    query = text(
        "SELECT s.period_start::text, ss.xmin::text FROM statement_summaries ss"
        " JOIN statements s ON s.id = ss.statement_id WHERE s.tenant_id = :t ORDER BY 1"
    )
    async with engine.connect() as conn:
        return dict((await conn.execute(query, {"t": tenant_id})).tuples().all())


async def test_only_the_statements_holding_a_changed_line_are_rebuilt(
    make_tenant: Any, load: Any, engine: AsyncEngine
) -> None:
    bank = await make_tenant()
    statements = [statement(f"{m}-01", f"{m}-{end}", f"{m}-{end}") for m, end in zip(MONTHS, ENDS, strict=True)]
    lines = [tx(f"T-{i}", f"{m}-10", "purchase", "10.00", "FreshMart") for i, m in enumerate(MONTHS)]
    await load(document(bank.slug, [customer(accounts=[account(statements=statements, transactions=lines)])]))
    before = await _versions(engine, bank.id)
    async with engine.begin() as conn:  # January's and June's lines, in one statement
        changed = text("UPDATE transactions SET amount = amount + 1 WHERE tenant_id = :t AND ref IN ('T-0', 'T-5')")
        await conn.execute(changed, {"t": bank.id})
    after = await _versions(engine, bank.id)
    rebuilt = sorted(start for start in before if after[start] != before[start])
    assert rebuilt == ["2026-01-01", "2026-06-01"]
    async with engine.connect() as conn:
        nets = text(
            "SELECT ss.net::text FROM statement_summaries ss JOIN statements s ON s.id = ss.statement_id"
            " WHERE s.tenant_id = :t ORDER BY s.period_start"
        )
        assert (await conn.execute(nets, {"t": bank.id})).scalars().all() == [
            "11.00", "10.00", "10.00", "10.00", "10.00", "11.00"
        ]  # fmt: skip

    async with engine.begin() as conn:  # a bump of every statement's data version moves no period
        await conn.execute(
            text("UPDATE statements SET data_version = data_version + 1 WHERE tenant_id = :t"), {"t": bank.id}
        )
    assert await _versions(engine, bank.id) == after


async def test_a_first_load_writes_each_summary_once(make_tenant: Any, engine: AsyncEngine, tmp_path: Path) -> None:
    """A load's new statements are summarized with their lines (migration 0026), not first empty and
    then again: six statements, five with a line and one without, six summary rows inserted and none
    updated in the load's transaction (pg_stat_xact_user_tables counts this transaction's writes);
    and the statements it created are not bumped by their lines (migration 0027): nobody has read them."""
    bank = await make_tenant()
    statements = [statement(f"{m}-01", f"{m}-{end}", f"{m}-{end}") for m, end in zip(MONTHS, ENDS, strict=True)]
    lines = [tx(f"T-{i}", f"{m}-10", "purchase", "10.00", "FreshMart") for i, m in enumerate(MONTHS[:-1])]
    doc = document(bank.slug, [customer(accounts=[account(statements=statements, transactions=lines)])])
    raw = await connect(engine.url.render_as_string(hide_password=False))
    try:
        async with raw.transaction():
            await load_csv(raw, bank.slug, write_csv(doc, tmp_path), lambda *_: None)
            writes = await raw.fetch(
                "SELECT relname, n_tup_ins, n_tup_upd FROM pg_stat_xact_user_tables"
                " WHERE relname IN ('statements', 'statement_summaries') ORDER BY relname"
            )
    finally:
        await raw.close()
    assert [tuple(w) for w in writes] == [("statement_summaries", 6, 0), ("statements", 6, 0)]
    async with engine.connect() as conn:
        query = text(
            "SELECT s.period_start::text, ss.net::text FROM statement_summaries ss"
            " JOIN statements s ON s.id = ss.statement_id WHERE s.tenant_id = :t ORDER BY 1"
        )
        nets: dict[str, str] = dict((await conn.execute(query, {"t": bank.id})).tuples().all())
    assert nets == {f"{m}-01": "10.00" for m in MONTHS[:-1]} | {f"{MONTHS[-1]}-01": "0.00"}


async def test_a_nightly_load_that_leaves_statements_alone_does_not_read_every_summary(
    make_tenant: Any, engine: AsyncEngine, tmp_path: Path
) -> None:
    """A load whose statements file is as last loaded never defers new statements' summaries, so no
    statement is looked for among the summaries as a new one (migration 0031: the unset setting
    read as NULL, and `NULL AND NOT EXISTS (...)` read every summary). The changed line's summary is
    rebuilt all the same."""
    bank = await make_tenant()
    statements = [statement(f"{m}-01", f"{m}-{end}", f"{m}-{end}") for m, end in zip(MONTHS, ENDS, strict=True)]
    lines = [tx(f"T-{i}", f"{m}-10", "purchase", "10.00", "FreshMart") for i, m in enumerate(MONTHS)]
    doc = document(bank.slug, [customer(accounts=[account(statements=statements, transactions=lines)])])
    await load_files(engine, bank.slug, write_csv(doc, tmp_path))
    doc["customers"][0]["accounts"][0]["transactions"][-1]["amount"] = "12.50"
    raw = await connect(engine.url.render_as_string(hide_password=False))  # its own: counts only this load
    try:
        async with raw.transaction():
            report = await load_csv(raw, bank.slug, write_csv(doc, tmp_path), lambda *_: None)
            scans = await raw.fetchval(
                "SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relname = 'statement_summaries'"
            )
    finally:
        await raw.close()
    assert report.tables["transactions"] == Counts(updated=1, unchanged=5)
    assert scans == 0
    async with engine.connect() as conn:
        query = text(
            "SELECT ss.net::text FROM statement_summaries ss JOIN statements s ON s.id = ss.statement_id"
            " WHERE s.tenant_id = :t ORDER BY s.period_start DESC LIMIT 1"
        )
        assert (await conn.execute(query, {"t": bank.id})).scalar_one() == "12.50"


async def test_a_statement_is_bumped_once_per_change_and_its_own_bumps_call_no_trigger(
    make_tenant: Any, load: Any, engine: AsyncEngine
) -> None:
    """A change of a statement's period, due date or minimum due bumps its data version once; an
    update that bumps the version itself (a nightly load bumps thousands) neither bumps it again nor
    calls the row trigger that looks for those changes (migration 0033)."""
    bank = await make_tenant()
    statements = [statement(f"{m}-01", f"{m}-{end}", f"{m}-{end}") for m, end in zip(MONTHS, ENDS, strict=True)]
    await load(document(bank.slug, [customer(accounts=[account(statements=statements)])]))
    versions = text("SELECT sum(data_version) FROM statements WHERE tenant_id = :t")
    calls = text(
        "SELECT COALESCE(sum(calls), 0) FROM pg_stat_xact_user_functions WHERE funcname = 'bump_statement_on_change'"
    )
    seen = []
    for change in [
        "period_end = period_end",  # set, not changed
        "period_end = period_end - 1",
        "period_start = period_start + 1",
        "due_date = due_date + 5",
        "minimum_due = minimum_due + 1",
        "data_version = data_version + 1",
    ]:
        async with engine.begin() as conn:
            await conn.execute(text("SET LOCAL track_functions = 'pl'"))  # the calls counted
            before = [(await conn.execute(q, {"t": bank.id})).scalar_one() for q in (versions, calls)]
            await conn.execute(text(f"UPDATE statements SET {change} WHERE tenant_id = :t"), {"t": bank.id})
            after = [(await conn.execute(q, {"t": bank.id})).scalar_one() for q in (versions, calls)]
            seen.append((change, after[0] - before[0], after[1] - before[1]))
    assert seen == [
        ("period_end = period_end", 0, 6),
        ("period_end = period_end - 1", 6, 6),
        ("period_start = period_start + 1", 6, 6),
        ("due_date = due_date + 5", 6, 6),
        ("minimum_due = minimum_due + 1", 6, 6),
        ("data_version = data_version + 1", 6, 0),
    ]
