"""What one plan is asked with: the prompt for the question, the form the engine decodes under, the
claims the answer must hold (app/domain/answer_policy.py) written as the plan's beginning for the
engine to continue, the check and the realizer. The service and the eval both ask the model through
here (then app/answers/generation.py `generate`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import NamedTuple

from app.answers.realize import Realizer
from app.domain.answer_policy import required_claims
from app.domain.claims import Claim
from app.domain.conversation import statement_lines
from app.domain.facts import BillFacts
from app.domain.intents import mentioned
from app.domain.knowledge import NO_QUOTES, Quotes
from app.domain.plan import PlanCheck, named_items
from app.domain.plan_schema import plan_grammar, plan_prefill, plan_schema
from app.domain.policy import TenantPolicy
from app.domain.understanding import Reading, understand
from app.domain.vocabulary import ChatTemplate, Intent, Locale, PromptLayout
from app.inference.engine import GenerationRequest
from app.prompts import render_prompt


class PlanJob(NamedTuple):
    """What one plan is asked and checked with: the engine request, the check, the realizer."""

    request: GenerationRequest
    check: PlanCheck
    realizer: Realizer
    prefill: str = ""  # the plan's beginning, in the prompt: the claims said before the engine runs


def plan_job(
    *,
    facts: BillFacts,
    intent: Intent,
    question: str,
    locale: Locale,
    policy: TenantPolicy,
    chat_template: ChatTemplate,
    request_id: str,
    priority: int,
    max_tokens: int,
    layout: PromptLayout = "static",
    focus: set[str] | None = None,
    previous_question: str | None = None,
    reading: Reading | None = None,
    said: Sequence[Claim] = (),
    quotes: Quotes = NO_QUOTES,
    chat: bool = False,
) -> PlanJob:
    """The plan prompt for this question, decoded under the form of the plans these facts allow, its
    required claims (app/domain/answer_policy.py) written for the engine to continue; the service and
    the eval both ask the model through here. `focus`: the labels the question is about (default:
    those it names); `previous_question`: a conversation's question before this one; `reading`: what
    the question asks (default: read here, for `intent`); `said`: what the conversation said already;
    `quotes`: the bank's passages the answer may quote (app/domain/knowledge.py); `chat`: asked in the
    chat widget (its next step may say "here in the chat")."""
    if reading is None:
        reading = understand(question, statement_lines(facts))
        reading = dataclasses.replace(reading, intent=intent, intents=(intent, *reading.intents))
    labels = mentioned(question, facts.labels) if focus is None else focus
    focused = named_items(facts, labels)
    passages = len(quotes.passages)
    required = required_claims(facts, reading, focus=focused, said=said, rules=policy.answers, passages=passages)
    check = PlanCheck(
        facts, intent, labels, intents=reading.all_intents, required=required, said=said, passages=passages
    )
    prompt = render_prompt(
        policy=policy,
        intent=intent,
        facts=facts,
        question=question,
        previous_question=previous_question,
        chat_template=chat_template,
        focus=check.focus,
        layout=layout,
        passages=quotes.passages,
    )
    allowed = check.allowed()
    prefill = plan_prefill(allowed)
    request = GenerationRequest(
        request_id=request_id,
        prompt=prompt.text + prefill,
        max_tokens=max_tokens,
        stop=prompt.stop,
        # A JSON schema describes a whole plan: only for one the engine writes from its start.
        json_schema=None if prefill else plan_schema(allowed),
        grammar=plan_grammar(allowed),
        priority=priority,
    )
    realizer = Realizer(facts, locale, quotes, intent, chat=chat)
    return PlanJob(request=request, check=check, realizer=realizer, prefill=prefill)
