"""Answers to read: for golden cases of each locale, the question, the model's plan, what the plan
says to the customer, and the deterministic answer beside it (docs/answers.md is written by
`bill-assistant eval --answers FILE`)."""

from __future__ import annotations

from collections.abc import Sequence

from app.domain.intents import mentioned
from app.domain.policy import TenantPolicy
from app.eval.golden import GoldenCase
from app.eval.run import CaseResult
from app.prompts import render_fallback


def answers_markdown(
    label: str, cases: Sequence[GoldenCase], results: Sequence[CaseResult], *, policy: TenantPolicy, per_locale: int
) -> str:
    """Up to `per_locale` cases of each locale, taking the intents and payment statuses in turn."""
    by_id = {r.id: r for r in results}
    out = [f"# Answers to read: `{label}` beside the deterministic answer", ""]
    for locale in sorted({c.locale for c in cases}):
        out += [f"## {locale}", ""]
        chosen: list[GoldenCase] = []
        seen: set[tuple[str, str]] = set()
        for case in (c for c in cases if c.locale == locale):  # one per intent and status first
            if (case.intent, case.facts.payment.status) not in seen and len(chosen) < per_locale:
                seen.add((case.intent, case.facts.payment.status))
                chosen.append(case)
        for case in chosen:
            result = by_id[case.id]
            focus = mentioned(case.question, case.facts.labels)
            fallback = render_fallback(case.intent, case.facts, case.locale, policy=policy, focus=focus)
            said = result.text if result.served_as_model else f"refused ({result.reason}): the deterministic answer"
            out += [
                f"### {case.question} ({case.intent}, {case.facts.payment.status})",
                "",
                f"- plan: `{result.plan}`",
                f"- the plan, said: {said}",
                f"- deterministic: {fallback}",
                "",
            ]
    return "\n".join(out)
