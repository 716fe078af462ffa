"""Why a served answer is not the model's: a rule (a metric label, a console label) and what exactly
failed, as a detail's form and its values: codes (a claim's kind, a direction, a payment status),
numbers, and text quoted as it was written (the model's, the engine's). The words around them are the
console locale's (prompts/locales/<locale>/words.json "fallback_detail"), so a detail reads in the
language of the page that shows it.

Stored in the audit row and sent to callers as "rule", "rule:detail" or "rule:detail {values as
JSON}" (`status_claim:status_said {"claimed_status":"paid","status":"unpaid"}`: `str(reason)`), read
back with `Reason.parse`."""

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


# What exactly failed, by the values each form takes (app/api/console/views.py `reason_words`).
Detail = Literal[
    "claims_over",  # limit: a plan of more claims than that
    "claim_for",  # kind, intents: a claim that does not fit the question's intents
    "bill_went",  # claimed, went: the bill's direction
    "driver",  # n: a cause the facts do not have
    "driver_went",  # n, went, claimed: a cause's direction
    "transaction",  # n: a transaction the facts do not have
    "not_a_fee",  # n: a fees question's transaction that is no fee or interest
    "not_asked",  # n: a transaction other than the one asked about
    "passage",  # n: a passage the prompt did not give
    "status_said",  # claimed_status, status
    "facts_answer",  # "the facts do not answer this", where they do
    "after_no_answer",  # kind: a claim after "the facts do not answer this"
    "paid_in_full",  # kind: a claim to pay on a paid statement
    "lacks",  # kinds: none of the claims the plan needed (one of them)
    "lacks_claim",  # a claim the plan needed, as the model writes it ("claim", "n", "status" …)
    "share",  # share: the sentence's share of Chinese characters
    "slot_went",  # slot, went, claimed: a sentence's direction for a cause's slot
    "sentence_went",  # went, claimed: a sentence's direction for the bill
    "stream_ended",  # the engine's stream ended without its last event
    "shutdown",  # the service was shutting down
    "quoted",  # text: what the model or the engine wrote, as it wrote it
]
DETAILS: tuple[Detail, ...] = get_args(Detail)
Value = int | str | list[str]
_VALUES = msgspec.json.Decoder(dict[str, Value])


class Reason(msgspec.Struct, frozen=True, kw_only=True):
    rule: Rule
    detail: Detail | None = None
    values: dict[str, Value] = msgspec.field(default_factory=dict)

    def __str__(self) -> str:
        if self.detail is None:
            return self.rule
        values = f" {msgspec.json.encode(self.values).decode()}" if self.values else ""
        return f"{self.rule}:{self.detail}{values}"

    @classmethod
    def parse(cls, text: str) -> Reason:
        """A reason as `str` wrote it (one written before details had forms: its detail quoted);
        ValueError for a rule this version does not know."""
        rule, _, rest = text.partition(":")
        if rule not in RULES:
            raise ValueError(f"unknown fallback rule {rule!r}")
        if not rest:
            return cls(rule=rule)
        detail, _, values = rest.partition(" ")
        if detail in DETAILS:
            try:
                return cls(rule=rule, detail=detail, values=_VALUES.decode(values) if values else {})
            except msgspec.DecodeError:
                pass
        return quoted(rule, rest)


def quoted(rule: Rule, text: str) -> Reason:
    """A reason whose detail is text as it was written (cut to 200 characters)."""
    return Reason(rule=rule, detail="quoted", values={"text": text[:200]})
