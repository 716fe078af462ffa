"""The API key cache: trusted for ttl seconds, bounded, disabled with ttl 0."""

from __future__ import annotations

import time

import pytest

from app.api.auth import KeyCache
from app.data.tenants import Principal
from app.domain.policy import TenantPolicy
from app.domain.priority import TenantLimits

P = Principal(
    tenant_id=1, tenant_slug="bank", priority_class="standard", policy=TenantPolicy(brand="Bank"), limits=TenantLimits()
)


def test_a_cached_key_expires_after_ttl(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    cache = KeyCache(ttl=30)
    cache.put("k", P)
    assert cache.get("k") == P
    now[0] += 31
    assert cache.get("k") is None


def test_ttl_zero_disables_and_size_bounds_the_cache() -> None:
    off = KeyCache(ttl=0)
    off.put("k", P)
    assert off.get("k") is None
    small = KeyCache(ttl=30, size=2)
    for key in ("a", "b", "c"):
        small.put(key, P)
    assert small.get("c") == P
    assert small.get("a") is None
