"""How much a customer may write into one conversation that a person answers (waiting for an agent, or
with one): a bounded pace and a bounded backlog, so that nobody can fill an agent's screen, the
transcript or the database from the widget (issue 34: 3,000 messages into one conversation were all
stored). The bank's rate applies besides (app/inference/rate.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass

WINDOW_S = 60.0  # the pace is counted over the last minute
# Waiting for a reply clears the backlog: when to look again.
UNANSWERED_RETRY_S = 30


@dataclass(frozen=True, kw_only=True)
class MessageCaps:
    per_minute: int  # messages a minute
    unanswered: int  # messages in a row without a reply
    unanswered_chars: int  # their characters


@dataclass(frozen=True, kw_only=True)
class Pace:
    """What the customer wrote into the conversation: in the last WINDOW_S, and since its last reply."""

    last_minute: int
    oldest_in_minute_s: float  # how long ago the oldest of those was written (0: none)
    unanswered: int
    unanswered_chars: int


@dataclass(frozen=True, kw_only=True)
class Refusal:
    retry_after_s: int
    message: str


def refusal(pace: Pace, caps: MessageCaps, length: int) -> Refusal | None:
    """None when one more message of `length` characters is within the caps; otherwise when to try
    again and why."""
    if pace.last_minute >= caps.per_minute:
        # A place frees when the oldest message of the minute leaves it.
        wait = max(1, math.ceil(WINDOW_S - pace.oldest_in_minute_s))
        return Refusal(
            retry_after_s=wait, message=f"at most {caps.per_minute} messages a minute in a conversation; wait {wait} s"
        )
    if pace.unanswered >= caps.unanswered:
        message = f"at most {caps.unanswered} messages in a row before a reply; wait for the agent's reply"
        return Refusal(retry_after_s=UNANSWERED_RETRY_S, message=message)
    if pace.unanswered_chars + length > caps.unanswered_chars:
        message = f"at most {caps.unanswered_chars} characters in a row before a reply; wait for the agent's reply"
        return Refusal(retry_after_s=UNANSWERED_RETRY_S, message=message)
    return None
