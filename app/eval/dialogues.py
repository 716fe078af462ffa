"""The golden dialogues through one engine profile, turn by turn, as the chat asks the model: each
question read with the turn before as its context (app/domain/understanding.py), its plan asked
with what the conversation has said so far (so required claims already said are not required again,
and the schema offers nothing said). Each turn reports whether it was served as the model's answer,
whether it is complete (every claim the answer policy requires of it is said) and which of its claims
repeat an earlier turn's; a repeat is counted only where the question did not ask for it ("by
when?", "say that again": the claims the policy requires of the turn)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import msgspec

from app.answers.planning import plan_job
from app.domain.claims import Claim
from app.domain.conversation import statement_lines
from app.domain.plan import same_claim
from app.domain.policy import TenantPolicy
from app.domain.understanding import Context, understand
from app.domain.vocabulary import ChatTemplate
from app.eval.golden import GoldenDialogue
from app.eval.run import ask_plan
from app.inference.engine import Engine


class TurnResult(msgspec.Struct, frozen=True, kw_only=True):
    dialogue: str
    turn: int  # 1-based
    question: str
    intents: list[str]  # every intent the question was read to ask
    served_as_model: bool
    reason: str | None
    text: str
    missing: list[str]  # required claims the served answer does not say
    repeated: list[str]  # claims said in an earlier turn and not asked for again


def _json(claims: Sequence[Claim]) -> list[str]:
    return [msgspec.json.encode(c).decode() for c in claims]


async def run_dialogue(
    engine: Engine,
    dialogue: GoldenDialogue,
    *,
    policy: TenantPolicy,
    chat_template: ChatTemplate,
    max_tokens: int,
    timeout_s: float,
) -> list[TurnResult]:
    facts, lines = dialogue.facts, statement_lines(dialogue.facts)
    context: Context | None = None
    previous: str | None = None
    said: list[Claim] = []
    results = []
    for turn, question in enumerate(dialogue.turns, start=1):
        reading = understand(question, lines, context)
        served, text = False, ""
        reason: str | None = "out_of_scope"
        missing: list[Claim] = []
        repeated: list[Claim] = []
        if reading.intent != "out_of_scope":
            job = plan_job(
                facts=facts,
                intent=reading.intent,
                question=question,
                locale=dialogue.locale,
                policy=policy,
                chat_template=chat_template,
                request_id=uuid.uuid4().hex,
                priority=0,
                max_tokens=max_tokens,
                focus=set(reading.subjects) or None,
                previous_question=previous,
                reading=reading,
                said=said,
            )
            outcome, *_ = await ask_plan(engine, job, timeout_s)
            served = outcome.text is not None and outcome.reason is None
            reason = str(outcome.reason) if outcome.reason else None
            text = outcome.text or ""
            now = [c.claim for c in outcome.claims or []]
            required = job.check.required or ()
            missing = [c for c in required if served and not any(same_claim(c, n) for n in now)]
            repeated = [c for c in now if any(same_claim(c, s) for s in said) and c not in required]
            said += [c for c in now if not any(same_claim(c, s) for s in said)]
            # A follow-up goes on from the last part of a multi-part question, as in the chat.
            context = Context(intent=reading.all_intents[-1], subjects=reading.subjects, locale=dialogue.locale)
        previous = question
        results.append(
            TurnResult(
                dialogue=dialogue.id,
                turn=turn,
                question=question,
                intents=list(reading.all_intents),
                served_as_model=served,
                reason=reason,
                text=text,
                missing=_json(missing),
                repeated=_json(repeated),
            )
        )
    return results
