"""The model's choice of an intent, for the questions the rules cannot decide (app/domain/understanding.py
`certain`): a constrained choice from the intent list on the same engine, under the admission the
answer already holds. Its prompt is static but for the question, so the engine's prefix cache serves
it; it writes a dozen tokens. Rules stay the fast path: a certain question never comes here."""

from __future__ import annotations

import asyncio
import dataclasses

import msgspec
import structlog

from app.answers.messages import Turn
from app.domain.vocabulary import INTENTS, Intent
from app.inference.engine import Engine, GenerationRequest, TextDelta
from app.prompts import render_intent_prompt
from app.settings import Settings
from app.timing import Stopwatch

log = structlog.get_logger("bill_assistant.answers")
# A policy question is the library's to recognise (a passage fits it), never the model's to guess.
CHOICES = [i for i in INTENTS if i != "policy"]
SCHEMA = {
    "type": "object",
    "properties": {"intent": {"enum": CHOICES}},
    "required": ["intent"],
    "additionalProperties": False,
}
GRAMMAR = 'root ::= "{\\"intent\\": \\"" (' + " | ".join(f'"{i}"' for i in CHOICES) + ') "\\"}"\n'
TIMEOUT_S = 3.0  # past this, the rules' reading stands: a slow choice must not hold up the answer


class _Choice(msgspec.Struct):
    intent: Intent


_decode = msgspec.json.Decoder(_Choice).decode


async def settle_intent(llm: Engine | None, turn: Turn, settings: Settings) -> Turn:
    """The turn, its intent chosen by the model where the rules could not decide (and the question
    says something: not "ok" or a bare number)."""
    reading, ask = turn.reading, turn.ask
    if llm is None or reading.certain or reading.language is None:
        return turn
    chosen = await choose_intent(
        llm,
        ask.request.question,
        settings=settings,
        request_id=ask.audit_id.hex,
        priority=turn.level,
        stopwatch=ask.stopwatch,
    )
    if chosen is None or chosen == reading.intent:
        return turn
    return dataclasses.replace(turn, reading=dataclasses.replace(reading, intent=chosen, intents=(chosen,)))


async def choose_intent(
    llm: Engine, question: str, *, settings: Settings, request_id: str, priority: int, stopwatch: Stopwatch
) -> Intent | None:
    """The intent the model chooses, or None (it failed, or took too long)."""
    request = GenerationRequest(
        request_id=f"{request_id}-intent",
        prompt=render_intent_prompt(question, settings.engine.chat_template),
        max_tokens=16,
        json_schema=SCHEMA,
        grammar=GRAMMAR,
        priority=priority,
    )
    text: list[str] = []

    async def run() -> None:
        async for event in llm.generate(request):  # cancelled on timeout: the engine aborts it
            if isinstance(event, TextDelta):
                text.append(event.text)

    with stopwatch.stage("intent"):
        try:
            await asyncio.wait_for(run(), TIMEOUT_S)
            return _decode("".join(text)).intent
        except (TimeoutError, msgspec.ValidationError, msgspec.DecodeError) as exc:
            log.warning("intent choice failed", error=type(exc).__name__)
        except Exception:  # the engine's own errors: the answer goes on with the rules' reading
            log.exception("intent choice failed")
    return None
