"""Why a served answer is not the model's: a rule (a metric label, a console label) and a detail.

Stored in the audit row as "rule" or "rule:detail" (`str(reason)`), read back with `Reason.parse`."""

from __future__ import annotations

from typing import Literal, get_args

import msgspec

Rule = Literal[
    # The model was not asked.
    "engine_off",
    "out_of_scope",
    "clarify",  # a conversation's question could mean two lines: asked back
    "handover",  # a conversation handed to an agent
    # The engine did not give a usable answer (app/answers/generation.py).
    "engine_error",
    "engine_timeout",
    "invalid_json",
    "truncated",
    # A realized sentence failed the truth contract's second line (app/domain/validation.py).
    "empty",
    "too_long",
    "wrong_language",
    "unknown_slot",
    "unslotted_figure",
    "unslotted_label",
    "status_claim",
    "role_mismatch",
    "wrong_direction",
    "wrong_driver",
    # The model's plan failed a check against the facts (app/domain/plan.py).
    "invalid_plan",
    "off_intent",
    "unknown_index",
    "wrong_subject",
    "missing_claim",
    "not_applicable",
]
RULES: tuple[Rule, ...] = get_args(Rule)


class Reason(msgspec.Struct, frozen=True, kw_only=True):
    rule: Rule
    detail: str = ""  # what exactly: the unknown amount, the contradicting claim, the engine's message

    def __str__(self) -> str:
        return f"{self.rule}:{self.detail}" if self.detail else self.rule

    @classmethod
    def parse(cls, text: str) -> Reason:
        """A reason as `str` wrote it; ValueError for a rule this version does not know."""
        rule, _, detail = text.partition(":")
        if rule not in RULES:
            raise ValueError(f"unknown fallback rule {rule!r}")
        return cls(rule=rule, detail=detail)
