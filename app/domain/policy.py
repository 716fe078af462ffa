"""A tenant's instructions to the assistant: its brand, its tone, what the assistant may never do."""

from __future__ import annotations

import msgspec

DEFAULT_FORBIDDEN = (
    "give financial, investment or legal advice",
    "promise refunds, fee waivers or credit limit changes",
    "ask for passwords, PINs, one-time codes or full card numbers",
)


class TenantPolicy(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    brand: str
    tone: str = "warm, clear and concise"
    forbidden: tuple[str, ...] = DEFAULT_FORBIDDEN
