"""Runs the golden set against one engine profile, exactly as the service asks the model.

Each case's prompt is rendered by `render_prompt` with the policy of a fixed demo tenant (the first
of app/demo.py's), sent as `answer_request` builds it (the same JSON schema, stop strings and token
limit) and read through `stream_model`, like the service. Then: is the answer served as the model's
(parsed and `validate(...).ok`), or why not (the fallback rule); the key-field errors in the raw
answer text (app/eval/keyfields.py; the text streamed so far when the JSON is unusable); the time
to first token (the engine's; for a request that timed out, when its answer's text began) and end
to end; the engine's token counts (none for a request that timed out).
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Callable, Sequence
from time import perf_counter

import msgspec

from app import demo
from app.answers.generation import answer_request, stream_model
from app.domain.policy import TenantPolicy
from app.domain.slots import SLOT
from app.domain.validation import validate
from app.domain.vocabulary import ChatTemplate, EngineKind
from app.eval.golden import GoldenCase
from app.eval.keyfields import Finding, key_field_errors
from app.inference.engine import Engine
from app.prompts import SlotValues, render_prompt
from app.timing import Stopwatch

_PARTIAL_TAIL = re.compile(r"[\w.,]+$")


class Profile(msgspec.Struct, frozen=True, kw_only=True):
    """An engine to evaluate: `LABEL=embedded[:/path/to.gguf]` or `LABEL=sglang:http://host:port`."""

    label: str  # names what is compared: model, quantization, build
    kind: EngineKind
    target: str | None  # the GGUF path (None: the default model) or the SGLang server's URL

    @classmethod
    def parse(cls, text: str) -> Profile:
        label, eq, spec = text.partition("=")
        kind, _, target = spec.partition(":")
        if not eq or not label.strip() or kind not in ("embedded", "sglang"):
            raise ValueError(
                f"a profile is LABEL=embedded[:/path/to.gguf] or LABEL=sglang:http://host:port (got {text!r})"
            )
        if kind == "sglang" and not target:
            raise ValueError(f"profile {label!r}: sglang needs the server's URL, e.g. sglang:http://127.0.0.1:30000")
        return cls(label=label.strip(), kind="sglang" if kind == "sglang" else "embedded", target=target or None)


class CaseResult(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    intent: str
    locale: str
    status: str  # the payment status of the facts
    served_as_model: bool
    reason: str | None  # the fallback rule when the model's answer is not served
    text: str  # the model's answer (the string inside its JSON), before validation
    findings: list[Finding]
    ttft_ms: float | None
    e2e_ms: float
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int


def demo_policy() -> TenantPolicy:
    tenant = demo.TENANTS[0]
    return TenantPolicy(brand=tenant.name, tone=tenant.tone)


def _as_read(text: str, case: GoldenCase) -> str:
    """The answer as a customer would read it: its known slots filled from the facts (a role-swapped
    slot then states the wrong amount, which the key-field classifier sees); unknown ones stay."""
    values = SlotValues(case.facts, case.locale)
    return SLOT.sub(lambda m: values.get(m.group(1), m.group(0)), text)


async def run_case(
    engine: Engine,
    case: GoldenCase,
    *,
    policy: TenantPolicy,
    chat_template: ChatTemplate,
    max_tokens: int,
    timeout_s: float,
    known: set[str],
) -> CaseResult:
    prompt = render_prompt(
        policy=policy, intent=case.intent, facts=case.facts, question=case.question, locale=case.locale,
        chat_template=chat_template,
    )  # fmt: skip
    request = answer_request(prompt, request_id=uuid.uuid4().hex, priority=0, max_tokens=max_tokens)
    stopwatch = Stopwatch()
    started = perf_counter()
    streamed: list[str] = []
    outcome = None
    first_text_ms: float | None = None  # when the engine never finishes (a timeout), the TTFT seen here
    async for item in stream_model(engine, request, timeout_s=timeout_s, stopwatch=stopwatch):
        if isinstance(item, str):
            if first_text_ms is None:
                first_text_ms = (perf_counter() - started) * 1000
            streamed.append(item)
        else:
            outcome = item
    e2e_ms = (perf_counter() - started) * 1000
    assert outcome is not None  # stream_model always ends with one
    # Without a usable answer (truncated, invalid JSON), what was streamed, less a word or number cut off.
    text = outcome.text if outcome.text is not None else _PARTIAL_TAIL.sub("", "".join(streamed))
    reason = outcome.reason.rule if outcome.reason else None
    if outcome.text is not None:
        verdict = validate(outcome.text, case.facts, case.locale)
        reason = verdict.rule
    usage = outcome.usage
    return CaseResult(
        id=case.id,
        intent=case.intent,
        locale=case.locale,
        status=case.facts.payment.status,
        served_as_model=outcome.text is not None and reason is None,
        reason=reason,
        text=text,
        findings=key_field_errors(_as_read(text, case), case.facts, case.intent, known=known) if text.strip() else [],
        ttft_ms=stopwatch.stages.get("ttft", first_text_ms),
        e2e_ms=e2e_ms,
        prompt_tokens=usage.prompt_tokens if usage else 0,
        cached_tokens=usage.cached_tokens if usage else 0,
        completion_tokens=usage.completion_tokens if usage else 0,
    )


async def run_profile(
    engine: Engine,
    cases: Sequence[GoldenCase],
    *,
    known: set[str],
    chat_template: ChatTemplate = "chatml",
    max_tokens: int = 160,
    timeout_s: float = 20.0,
    concurrency: int = 2,
    on_done: Callable[[CaseResult], None] | None = None,
) -> list[CaseResult]:
    """Every case through the engine, at most `concurrency` at a time; results in the cases' order."""
    policy = demo_policy()
    gate = asyncio.Semaphore(concurrency)

    async def one(case: GoldenCase) -> CaseResult:
        async with gate:
            result = await run_case(
                engine, case, policy=policy, chat_template=chat_template, max_tokens=max_tokens,
                timeout_s=timeout_s, known=known,
            )  # fmt: skip
        if on_done:
            on_done(result)
        return result

    return list(await asyncio.gather(*(one(c) for c in cases)))


def open_engine(profile: Profile, *, parallel: int, threads: int, timeout_s: float, model: str | None = None) -> Engine:
    """The profile's engine; the caller closes it."""
    if profile.kind == "sglang":
        from app.inference.sglang import SGLangEngine

        assert profile.target is not None  # Profile.parse requires it
        return SGLangEngine(profile.target, model=model or profile.label, timeout_s=timeout_s + 5)
    from app.inference.embedded import EmbeddedEngine, default_model_path

    return EmbeddedEngine(profile.target or default_model_path(), parallel=parallel, threads=threads)
