"""The closed set of claims a plan may hold (app/domain/plan.py checks them against the facts).

Each claim type has a tag (how the model writes it: `{"claim": "driver", "n": 1, "direction": "up"}`),
typed arguments, and two reviewed wordings per locale (prompts/locales/<locale>/claims.j2)."""

from __future__ import annotations

from typing import Any, Literal, get_args

import msgspec

from app.domain.facts import PaymentStatus

MAX_CLAIMS = 5  # a plan's claims; more when its required claims are more (then these and MAX_ADDED)
MAX_ADDED = 3  # the claims a model may add to the required ones

Direction = Literal["up", "down", "same"]
DriverDirection = Literal["up", "down"]
Action = Literal["pay", "agent"]
Wording = Literal[1, 2]  # every claim type has these reviewed wordings in each locale
WORDINGS: tuple[Wording, ...] = get_args(Wording)


def sign_word(amount: Any) -> Direction:
    """A change's direction as claims write it: the sign of an amount (or of a number's sign)."""
    return "up" if amount > 0 else "down" if amount < 0 else "same"


class Claim(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True, tag_field="claim"
):
    wording: Wording = 1  # which reviewed wording says it


class NewBalance(Claim, frozen=True, tag="new_balance"):
    pass


class Change(Claim, frozen=True, tag="change"):
    direction: Direction  # must be the sign of the bill's difference


class DriverClaim(Claim, frozen=True, tag="driver"):
    n: int  # the driver's number in FACTS (largest first)
    direction: DriverDirection  # must be the sign of that driver's amount


class Transaction(Claim, frozen=True, tag="transaction"):
    n: int  # the transaction's number in FACTS


class FeesInterest(Claim, frozen=True, tag="fees_interest"):
    pass


class PaymentStatusClaim(Claim, frozen=True, tag="payment_status"):
    status: PaymentStatus  # must be the facts' status


class PaidSinceClose(Claim, frozen=True, tag="paid_since_close"):
    pass


class StillToPay(Claim, frozen=True, tag="still_to_pay"):
    pass


class MinimumDue(Claim, frozen=True, tag="minimum_due"):
    pass


class PeriodClaim(Claim, frozen=True, tag="period"):
    pass


class NextStep(Claim, frozen=True, tag="next_step"):
    action: Action


class NoAnswer(Claim, frozen=True, tag="no_answer"):
    pass


class PassageClaim(Claim, frozen=True, tag="passage"):
    """One of the bank's own passages, quoted verbatim with its article's title (app/domain/knowledge.py)."""

    n: int  # the passage's number among PASSAGES in the prompt


class NothingMore(Claim, frozen=True, tag="nothing_more"):
    """A follow-up's answer when the conversation has said all the facts hold: only ever required by
    the service (app/domain/answer_policy.py), never the model's to choose."""


AnyClaim = (
    NewBalance
    | Change
    | DriverClaim
    | Transaction
    | FeesInterest
    | PaymentStatusClaim
    | PaidSinceClose
    | StillToPay
    | MinimumDue
    | PeriodClaim
    | NextStep
    | NoAnswer
    | PassageClaim
    | NothingMore
)
CLAIM_TYPES: dict[str, type[Claim]] = {str(cls.__struct_config__.tag): cls for cls in get_args(AnyClaim)}


class Plan(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    claims: list[AnyClaim]


def kind_of(claim: Claim) -> str:
    """The claim's type, as the model writes it ("driver")."""
    return str(claim.__struct_config__.tag)


_decode_claim: msgspec.json.Decoder[AnyClaim] = msgspec.json.Decoder(AnyClaim)


def decode_claim(raw: bytes | str) -> AnyClaim:
    """One claim object as the model wrote it; msgspec.ValidationError/DecodeError if it is none."""
    return _decode_claim.decode(raw)
