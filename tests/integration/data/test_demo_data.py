"""Demo data in the database: every account in it can be explained, and its stories show
(tests/unit/test_demo.py: deterministic, realistic, valid import files)."""

from __future__ import annotations

from collections import Counter
from datetime import date
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app import demo
from app.data.history import load_history
from app.domain.facts import compute_facts

AS_OF = date(2026, 11, 30)


async def test_every_seeded_account_explains_and_the_stories_show(
    make_tenant: Any, load: Any, engine: AsyncEngine
) -> None:
    tenant = await make_tenant()
    doc = demo.generate(demo.TENANTS[1], customers=40, seed=3)
    doc["tenant"] = tenant.slug
    await load(doc)
    async with engine.connect() as conn:
        refs = (await conn.execute(text("SELECT ref FROM accounts WHERE tenant_id = :t"), {"t": tenant.id})).scalars()
        statuses: Counter[str] = Counter()
        driver_kinds: Counter[str] = Counter()
        for ref in refs.all():
            history = await load_history(conn, tenant.id, ref, None, AS_OF)
            assert history is not None
            facts = compute_facts(history, AS_OF)
            assert sum(d.amount for d in facts.drivers) == facts.difference
            statuses[facts.payment.status] += 1
            driver_kinds.update({d.kind for d in facts.drivers})
    assert {"paid", "partially_paid", "overdue"} <= statuses.keys()
    assert {"purchases", "fees", "interest", "refunds", "carried_balance"} <= driver_kinds.keys()
