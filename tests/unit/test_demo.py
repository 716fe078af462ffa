"""Demo data: deterministic, realistic, valid import files (tests/integration/data/test_demo_data.py explains
every account in it)."""

from __future__ import annotations

import msgspec

from app import demo
from app.data.import_format import parse


def test_same_seed_same_data_and_a_new_seed_new_data() -> None:
    tenant = demo.TENANTS[0]
    assert demo.generate(tenant, customers=20, seed=1) == demo.generate(tenant, customers=20, seed=1)
    assert demo.generate(tenant, customers=20, seed=1) != demo.generate(tenant, customers=20, seed=2)


def test_default_demo_is_a_few_hundred_customers_in_both_languages() -> None:
    docs = [demo.generate(t) for t in demo.TENANTS]
    customers = [c for d in docs for c in d["customers"]]
    assert 200 <= len(customers) <= 500
    assert {c["locale"] for c in customers} == {"en", "zh-CN"}
    for d in docs:
        parse(msgspec.json.encode(d))  # valid import files
