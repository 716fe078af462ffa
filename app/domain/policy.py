"""A tenant's instructions to the assistant: its brand, its tone, what the assistant may never do."""

from __future__ import annotations

import msgspec

from app.domain.answer_policy import check_rules

DEFAULT_FORBIDDEN = (
    "give financial, investment or legal advice",
    "promise refunds, fee waivers or credit limit changes",
    "ask for passwords, PINs, one-time codes or full card numbers",
)


class TenantPolicy(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    brand: str
    tone: str = "warm, clear and concise"
    forbidden: tuple[str, ...] = DEFAULT_FORBIDDEN
    # The bank's answer policy where it differs from the default (app/domain/answer_policy.py
    # DEFAULT_RULES): "intent:state" -> the claims a complete answer holds, in order.
    answers: dict[str, tuple[str, ...]] = {}

    def __post_init__(self) -> None:
        check_rules(self.answers)  # a ValueError here is msgspec's ValidationError for the caller

    def __hash__(self) -> int:  # the system prompt is cached per policy; `answers` is not in it
        return hash((self.brand, self.tone, self.forbidden, tuple(sorted(self.answers.items()))))
