"""Answers to read: for golden cases of each locale, the question, the model's plan, what the plan
says to the customer, and the deterministic answer beside it (docs/answers.md is written by
`bill-assistant eval --answers FILE`)."""

from __future__ import annotations

from collections.abc import Sequence

from app.domain.intents import mentioned
from app.domain.policy import TenantPolicy
from app.eval.dialogues import TurnResult
from app.eval.golden import GoldenCase, GoldenDialogue
from app.eval.run import CaseResult
from app.prompts import render_fallback, render_fallbacks


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


def dialogues_markdown(
    dialogues: Sequence[GoldenDialogue], turns: Sequence[TurnResult], *, policy: TenantPolicy
) -> str:
    """The golden dialogues (follow-ups, two-part questions), each turn's plan said beside the
    deterministic answer of each of its parts."""
    out = ["## Dialogues and two-part questions", ""]
    for dialogue in dialogues:
        out += [f"### {dialogue.id} ({dialogue.locale}, {dialogue.facts.payment.status})", ""]
        for turn in (t for t in turns if t.dialogue == dialogue.id):
            fallback = render_fallbacks(turn.intents, dialogue.facts, dialogue.locale, policy=policy)  # type: ignore[arg-type]
            said = turn.text if turn.served_as_model else f"refused ({turn.reason}): the deterministic answer"
            out += [
                f"{turn.turn}. **{turn.question}** ({' + '.join(turn.intents)})",
                f"   - the plan, said: {said}",
                f"   - deterministic: {fallback}",
            ]
        out.append("")
    return "\n".join(out)
