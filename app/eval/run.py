"""Runs the golden set against one engine profile, exactly as the service asks the model.

Each case's prompt is rendered by `render_prompt` with the policy of a fixed demo tenant (the first
of app/demo.py's), sent as `plan_job` builds it for the service (the same plan schema, stop strings and token
limit) and read through `generate`, like the service. Then: is the plan served as the model's
answer, or why not (the fallback rule); the key-field errors (app/eval/keyfields.py) in the text the
accepted plan says, and the plan-level ones of a refused plan (a status, direction or subject that
contradicts the facts); the time to first token (the engine's; for a request that timed out, when
its first claim was said) and end to end; the engine's token counts (none for a request that timed
out).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from time import perf_counter

import msgspec

from app import demo
from app.answers.generation import Outcome, generate
from app.answers.planning import PlanJob, plan_job
from app.domain.plan import same_claim
from app.domain.policy import TenantPolicy
from app.domain.vocabulary import ChatTemplate, EngineKind
from app.eval.golden import GoldenCase
from app.eval.keyfields import Finding, Kind, key_field_errors
from app.inference.engine import Engine
from app.timing import Stopwatch


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
    text: str  # the answer the plan said, when it was accepted ("" otherwise)
    plan: str  # the claims the model wrote (JSON), as far as they could be read
    findings: list[Finding]
    # The claims the answer policy requires of this case (app/domain/answer_policy.py) that the served
    # answer does not say: empty for a complete answer (and for one not served).
    missing: list[str] = []
    ttft_ms: float | None
    e2e_ms: float
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int


async def ask_plan(engine: Engine, job: PlanJob, timeout_s: float) -> tuple[Outcome, Stopwatch, float | None, float]:
    """The job's plan through `generate`, like the service: the outcome, its stage times, when its
    first text came (for a request that timed out: the only first-text time there is) and end to end."""
    stopwatch = Stopwatch()
    started = perf_counter()
    outcome = None
    first_text_ms: float | None = None
    async for item in generate(
        engine,
        job.request,
        check=job.check,
        realizer=job.realizer,
        timeout_s=timeout_s,
        stopwatch=stopwatch,
        prefill=job.prefill,
    ):
        if isinstance(item, str):
            if first_text_ms is None:
                first_text_ms = (perf_counter() - started) * 1000
        else:
            outcome = item
    assert outcome is not None  # generate always ends with one
    return outcome, stopwatch, first_text_ms, (perf_counter() - started) * 1000


def demo_policy() -> TenantPolicy:
    tenant = demo.TENANTS[0]
    return TenantPolicy(brand=tenant.name, tone=tenant.tone)


# Refused plans that contradict the facts, by the key-field kind they would have broken.
PLAN_ERRORS: dict[str, Kind] = {
    "status_claim": "status_flip",
    "wrong_direction": "wrong_direction",
    "wrong_driver": "wrong_driver",
    "unknown_index": "wrong_driver",
    "wrong_subject": "wrong_driver",
}


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
    job = plan_job(
        facts=case.facts,
        intent=case.intent,
        question=case.question,
        locale=case.locale,
        policy=policy,
        chat_template=chat_template,
        request_id=uuid.uuid4().hex,
        priority=0,
        max_tokens=max_tokens,
    )
    outcome, stopwatch, first_text_ms, e2e_ms = await ask_plan(engine, job, timeout_s)
    reason = outcome.reason
    text = outcome.text or ""
    findings = key_field_errors(text, case.facts, case.intent, known=known) if text else []
    if reason is not None and reason.rule in PLAN_ERRORS:
        findings.append(Finding(kind=PLAN_ERRORS[reason.rule], detail=f"plan: {reason}"))
    usage = outcome.usage
    said = [c.claim for c in outcome.claims or []]
    missing = [c for c in job.check.required or () if not any(same_claim(c, s) for s in said)]
    return CaseResult(
        id=case.id,
        intent=case.intent,
        locale=case.locale,
        status=case.facts.payment.status,
        served_as_model=outcome.text is not None and reason is None,
        reason=reason.rule if reason else None,
        text=text,
        plan=msgspec.json.encode(outcome.plan or []).decode(),
        findings=findings,
        missing=[msgspec.json.encode(c).decode() for c in missing] if outcome.text is not None else [],
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
                engine,
                case,
                policy=policy,
                chat_template=chat_template,
                max_tokens=max_tokens,
                timeout_s=timeout_s,
                known=known,
            )
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
