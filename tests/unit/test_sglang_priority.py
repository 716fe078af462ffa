"""The priority SGLang gets: levels spread so that its preemption rule (waiting - running >
threshold, sglang/srt/managers/schedule_policy.py) lets a person's answer throw out work two levels
below it, never the level just below; and its waiting queue (fcfs + priority) orders by level."""

from __future__ import annotations

import pytest

from app.domain.priority import (
    CHANNEL_LEVEL,
    LEVELS,
    SGLANG_PREEMPTION_THRESHOLD,
    effective_level,
    sglang_priority,
)
from app.domain.vocabulary import Channel


def sglang_preempts(waiting_level: int, running_level: int) -> bool:
    """SGLang's own rule, full: a running request is thrown out for a waiting one only when
    `priority_diff > priority_scheduling_preemption_threshold` (PrefillAdder.preempt_to_schedule)."""
    return sglang_priority(waiting_level) - sglang_priority(running_level) > SGLANG_PREEMPTION_THRESHOLD


def test_each_level_is_sent_spread_and_in_the_same_order() -> None:
    assert [sglang_priority(level) for level in (0, 1, 2, 3)] == [0, 10, 20, 30]
    sent = [sglang_priority(level) for level in LEVELS]
    assert sent == sorted(sent, reverse=True)  # a higher level is a higher SGLang priority


def test_the_spread_is_what_makes_preemption_possible() -> None:
    # The raw levels (0..3) never differ by more than the threshold: priority would be inert.
    assert max(LEVELS) - min(LEVELS) <= SGLANG_PREEMPTION_THRESHOLD
    assert sglang_priority(max(LEVELS)) - sglang_priority(min(LEVELS)) > SGLANG_PREEMPTION_THRESHOLD


@pytest.mark.parametrize(
    ("waiting", "running", "preempts"),
    [
        ("widget", "batch", True),
        ("widget", "api", True),
        ("widget", "console", False),
        ("console", "batch", True),
        ("console", "api", False),
        ("api", "batch", False),
        ("batch", "widget", False),
        ("widget", "widget", False),
    ],
)
def test_which_channel_preempts_which(waiting: Channel, running: Channel, preempts: bool) -> None:
    assert sglang_preempts(CHANNEL_LEVEL[waiting], CHANNEL_LEVEL[running]) is preempts


def test_a_capped_tenant_preempts_by_its_capped_level() -> None:
    # A standard-class tenant's widget request runs at the console level: it cannot preempt api work.
    capped = effective_level("standard", "widget")
    assert sglang_preempts(capped, CHANNEL_LEVEL["api"]) is False
    assert sglang_preempts(effective_level("interactive", "widget"), CHANNEL_LEVEL["api"]) is True


def test_an_unknown_level_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown priority level 7"):
        sglang_priority(7)
