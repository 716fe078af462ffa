"""The prompt layouts: static-first (served) and FACTS-first (only to measure what static-first buys)."""

from __future__ import annotations

from datetime import date

from app.domain.facts import compute_facts
from app.domain.policy import TenantPolicy
from app.domain.vocabulary import PromptLayout
from app.prompts import render_prompt
from tests.histories import GYM, OCT, SEP, history


def test_dynamic_layout_puts_facts_before_the_instructions() -> None:
    facts = compute_facts(history(GYM, [SEP, OCT]), date(2026, 11, 1))

    def render(layout: PromptLayout) -> str:
        return render_prompt(
            policy=TenantPolicy(brand="Northbridge Bank"), intent="bill_change", facts=facts,
            question="Why is my bill higher?", chat_template="chatml", layout=layout,
        ).text  # fmt: skip

    static, dynamic = render("static"), render("dynamic")
    assert static.index("You plan the answers") < static.index("driver 1: purchases at “City Gym”, up")
    assert dynamic.startswith("<|im_start|>system\nFACTS\n")
    assert dynamic.index("driver 1: purchases at “City Gym”, up") < dynamic.index("You plan the answers")
    assert "Why is my bill higher?" in dynamic
