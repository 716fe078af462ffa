"""Statement summaries (migration 0011) equal a recomputation from the lines (app/domain/facts.py)
after any sequence of imports, bulk loads, corrections, deletions and moved statement periods."""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from app.data.database import create_engine
from app.data.history import _HISTORY_SQL, load_history
from app.data.tenants import create_tenant
from app.domain.facts import nameable, totals
from app.domain.money import ZERO, signed
from app.domain.records import Line, Total
from tests.factories import account, customer, document, import_document, load_files, statement, tx, write_csv

PERIODS = [("2026-08-01", "2026-08-31"), ("2026-09-01", "2026-09-30"), ("2026-10-01", "2026-10-31")]
# Labels that Python's strip() and the SQL btrim() must read alike, and fees named by description.
NAMES = st.sampled_from([None, "", "City Gym", " City Gym", "City Gym\u00a0", "\u3000Café", "FreshMart"])
KIND_AMOUNT = st.one_of(
    st.tuples(st.sampled_from(["purchase", "fee", "interest", "refund", "payment"]),
              st.sampled_from(["0.01", "12.00", "12.99", "100.00", "3.50"])),
    st.tuples(st.just("adjustment"), st.sampled_from(["-5.00", "7.25"])),
)  # fmt: skip
LINE = st.builds(
    lambda ref, day, ka, merchant, description: {
        "ref": f"T-{ref}", "posted_on": (date(2026, 8, 1) + timedelta(days=day)).isoformat(), "kind": ka[0],
        "amount": ka[1], "merchant": merchant, "description": description,
    },
    st.integers(0, 24), st.integers(0, 110), KIND_AMOUNT, NAMES, NAMES,
)  # fmt: skip
STEP = st.one_of(
    st.tuples(st.just("json"), st.lists(LINE, max_size=15, unique_by=lambda t: t["ref"])),
    st.tuples(st.just("csv"), st.lists(LINE, max_size=15, unique_by=lambda t: t["ref"])),
    st.tuples(st.just("delete"), st.integers(0, 24)),
    st.tuples(st.just("close"), st.integers(-10, 10)),  # the last statement ends this many days from 31 Oct
)

_decode_totals = msgspec.json.Decoder(list[Total])
_decode_lines = msgspec.json.Decoder(list[Line])


async def _run(url: str, slug: str, steps: list[tuple[str, Any]]) -> None:
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            tenant = await create_tenant(conn, slug, slug, "standard")
        base = document(slug, [customer(accounts=[account(statements=[statement(s, e, e) for s, e in PERIODS],
                                                          transactions=[])])])  # fmt: skip
        async with engine.begin() as conn:
            await import_document(conn, base)
        base["customers"][0]["accounts"][0]["statements"] = []  # later loads leave the (moved) periods alone
        for kind, arg in steps:
            async with engine.begin() as conn:
                if kind in ("json", "csv"):
                    base["customers"][0]["accounts"][0]["transactions"] = arg
                    if kind == "json":
                        await import_document(conn, base)
                    else:
                        with tempfile.TemporaryDirectory() as tmp:
                            files = write_csv(base, Path(tmp))
                            await load_files(engine, slug, {"transactions": files["transactions"]})
                elif kind == "delete":
                    await conn.execute(text("DELETE FROM transactions WHERE tenant_id = :t AND ref = :r"),
                                       {"t": tenant, "r": f"T-{arg}"})  # fmt: skip
                else:
                    end = date(2026, 10, 31) + timedelta(days=arg)
                    await conn.execute(
                        text("UPDATE statements SET period_end = :e, due_date = :e WHERE tenant_id = :t "
                             "AND period_start = '2026-10-01'"), {"t": tenant, "e": end})  # fmt: skip
            await _check(engine, tenant)
    finally:
        await engine.dispose()


async def _check(engine: Any, tenant: int) -> None:
    async with engine.connect() as conn:
        lines = [
            Line(posted_on=r.posted_on, kind=r.kind, amount=r.amount, merchant=r.merchant, description=r.description)
            for r in await conn.execute(text(
                "SELECT posted_on, kind, amount, merchant, description FROM transactions WHERE tenant_id = :t "
                "ORDER BY posted_on, id"), {"t": tenant})
        ]  # fmt: skip
        summaries = (await conn.execute(text(
            "SELECT s.period_start, s.period_end, ss.net, CAST(to_json(ss.totals) AS text), "
            "CAST(to_json(ss.lines) AS text) "
            "FROM statements s JOIN statement_summaries ss ON ss.statement_id = s.id WHERE s.tenant_id = :t"),
            {"t": tenant})).all()  # fmt: skip
    assert len(summaries) == len(PERIODS)
    for start, end, net, stored_totals, stored_lines in summaries:
        period = [line for line in lines if start <= line.posted_on <= end]
        assert net == sum((signed(x.kind, x.amount) for x in period), ZERO)
        key = lambda t: (t.kind, t.label)  # noqa: E731 (SQL orders labels by collation, Python by code point)
        assert sorted(_decode_totals.decode(stored_totals), key=key) == sorted(totals(period), key=key)
        assert _decode_lines.decode(stored_lines) == nameable(period)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEP, min_size=1, max_size=5))
def test_summaries_equal_a_recomputation_from_the_lines(database_url: str, steps: list[tuple[str, Any]]) -> None:
    slug = f"sum-{uuid.uuid4().hex[:12]}"  # hypothesis replays examples: a new tenant each time
    asyncio.run(_run(database_url, slug, steps))


def test_the_named_lines_follow_the_domain_limits() -> None:
    many = [Line(posted_on=date(2026, 10, 1), kind="purchase", amount=Decimal(n), merchant="M") for n in range(1, 40)]
    fees = [Line(posted_on=date(2026, 10, 2), kind="fee", amount=Decimal("0.5"), description="F")] * 30
    named = nameable(many + fees)
    assert [x.amount for x in named if x.kind == "purchase"] == [Decimal(n) for n in range(39, 27, -1)]
    assert len([x for x in named if x.kind == "fee"]) == 24


async def test_a_question_naming_a_merchant_reads_its_largest_lines_beyond_the_summarys(
    make_tenant: Any, load: Any, engine: Any
) -> None:
    """The summary names the 12 largest charges; a question naming a merchant gets that merchant's
    largest lines too (app/data/history.py), and only a named one's."""
    tenant = await make_tenant()
    big = [tx(f"B-{n}", "2026-10-03", "purchase", f"{100 + n}.00", "Big Store") for n in range(14)]
    small = [tx(f"K-{n}", "2026-10-04", "purchase", f"{n + 1}.00", "Kiosk") for n in range(3)]
    await load(document(tenant.slug, [customer(accounts=[account(transactions=big + small)])]))

    async def lines(question: str) -> list[tuple[str | None, Decimal]]:
        async with engine.connect() as conn:
            history = await load_history(conn, tenant.id, "A-1", None, date(2026, 11, 1), question)
        assert history is not None
        return sorted((line.merchant, line.amount) for line in history.lines)

    largest = [("Big Store", Decimal(100 + n)) for n in range(2, 14)]
    assert await lines("Why is my bill higher?") == largest
    assert await lines("What did I buy at the kiosk?") == [*largest, *(("Kiosk", Decimal(n)) for n in (1, 2, 3))]
    assert await lines("and big store?") == sorted([*largest, ("Big Store", Decimal(100)), ("Big Store", Decimal(101))])


async def test_a_named_merchants_lines_are_read_without_the_periods_others(
    make_tenant: Any, load: Any, engine: Any
) -> None:
    """In a 3,000-line statement of 20 merchants, a question naming one reads that merchant's lines
    through the label index (migration 0029), not the period's 3,000 (bench statement-size: 3.6 times
    a 20-line statement's answer before, 1.4 after)."""
    tenant = await make_tenant()
    lines = [
        tx(f"T-{n}", f"2026-10-{n % 28 + 1:02d}", "purchase", f"{n % 997 + 1}.00", f"Merchant {n % 20:02d}")
        for n in range(3000)
    ]
    await load(document(tenant.slug, [customer(accounts=[account(transactions=lines)])]))
    async with engine.begin() as conn:
        await conn.execute(text("ANALYZE transactions"))
        where = {
            "tenant_id": tenant.id,
            "account_ref": "A-1",
            "period_end": None,
            "as_of": date(2026, 11, 1),
            "question_lower": "what did i pay at merchant 07?",
        }
        driver = (await conn.get_raw_connection()).driver_connection
        raw = await driver.fetchval("EXPLAIN (ANALYZE, FORMAT JSON) " + _HISTORY_SQL.sql, *_HISTORY_SQL.args(where))

    def scans(node: dict[str, Any]) -> list[tuple[str, int]]:
        own = [(node["Index Name"], node["Actual Rows"])] if node.get("Relation Name") == "transactions" else []
        return own + [s for child in node.get("Plans", []) for s in scans(child)]

    read = scans(raw[0]["Plan"])  # the driver decodes json
    by_index = dict(read)
    assert 140 <= by_index["ix_transactions_account_id_label"] <= 150  # Merchant 07's, less the summary's
    assert max(by_index.values()) <= 150  # not the period's 3,000
