"""What an A/B compares, from two profiles' replays of the same traffic: per profile the served share,
the key-field errors by kind, the fallback reasons, the answer-cache hit share, the cached-token share
and each stage's P50/P90/P99; the eval gate between them; the requests whose answers differ.

Each replayed request becomes an eval case result (app/eval/run.py `CaseResult`), so the figures and
the pass/fail are the eval's own (`summarize`, `gate`, the same thresholds), not a second copy:
- served: answered with the model's checked answer or a cached one (`source` model or cache); a
  fallback, a refusal (429/503) or no answer at all is not served; a refusal's reason is `http_<status>`;
- key-field errors: the eval's extractor over each served text against that answer's own facts
  (worked out again from the records, as the service did: the same account, statement, as-of date and
  question), and the plan-level errors of a refused plan (its fallback reason, from the audit row);
- tokens: the engine's, of the answers that ran it (a cache hit ran nothing).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import date
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncEngine

from app.data.history import load_history
from app.data.tenants import tenant_id
from app.domain.facts import BillFacts, compute_facts
from app.eval.keyfields import Finding, key_field_errors
from app.eval.report import DEFAULT_THRESHOLDS, GateResult, Summary, Thresholds, gate, summarize
from app.eval.run import PLAN_ERRORS, CaseResult, Profile
from app.replay.ab import CacheState, ProfileRun
from app.replay.run import Sample
from app.replay.traffic import Arrival
from app.reports.stats import percentile

# Stage (as the report names it) -> the answer's `timings_ms` key; "end to end" is the client's.
STAGES = {
    "admission wait": "admission",
    "engine queue": "queue",
    "time to first token": "ttft",
    "engine": "engine",
    "server total": "total",
}
END_TO_END = "end to end (client)"


class Stage(msgspec.Struct, frozen=True, kw_only=True):
    n: int
    p50: float | None
    p90: float | None
    p99: float | None


class Side(msgspec.Struct, frozen=True, kw_only=True):
    label: str
    engine: str
    target: str | None
    settings: dict[str, str]  # the profile's overrides, secrets hidden
    cache_rows_at_start: int
    engine_cache: str
    requests: int
    answered: int
    refused: dict[str, int]  # HTTP status (or "no answer") -> requests
    sources: dict[str, int]  # model | cache | fallback -> answers
    served_share: float
    cache_hit_share: float  # of the answered
    cached_token_share: float | None  # cached / prompt tokens of the answers that ran the engine
    stages: dict[str, Stage]
    summary: Summary  # the eval's figures: errors by kind, fallbacks, tokens, one result per request


class Said(msgspec.Struct, frozen=True, kw_only=True):
    status: int
    source: str | None
    reason: str | None
    text: str


class AnswerPair(msgspec.Struct, frozen=True, kw_only=True):
    seq: int
    tenant: str
    channel: str
    account_ref: str
    question: str
    baseline: Said
    candidate: Said


class AbReport(msgspec.Struct, frozen=True, kw_only=True):
    traffic: str
    requests: int
    cache: CacheState
    speed: float
    thresholds: Thresholds
    baseline: Side
    candidate: Side
    gate: GateResult
    differing: list[AnswerPair]


FactsKey = tuple[str, str, str, str, str]  # tenant, account, period end, as of, question


def _key(arrival: Arrival, answer: dict[str, Any]) -> FactsKey:
    statement, payment = answer["statement"], answer["payment"]
    return (arrival.tenant, arrival.account_ref, statement["period_end"], payment["as_of"], arrival.question)


async def answer_facts(
    db: AsyncEngine, arrivals: Sequence[Arrival], runs: Sequence[ProfileRun]
) -> dict[int, BillFacts]:
    """Each answered request's facts, worked out again from the records (by seq)."""
    wanted: dict[int, FactsKey] = {}
    for run in runs:
        for s in run.samples:
            if s.answer is not None and s.seq not in wanted:
                wanted[s.seq] = _key(arrivals[s.seq], s.answer)
    computed: dict[FactsKey, BillFacts] = {}
    async with db.connect() as conn:
        tenants = {slug: await tenant_id(conn, slug) for slug in {k[0] for k in wanted.values()}}
        for key in set(wanted.values()):
            slug, ref, period_end, as_of, question = key
            tenant = tenants[slug]
            assert tenant is not None  # it answered
            day = date.fromisoformat(as_of)
            history = await load_history(conn, tenant, ref, date.fromisoformat(period_end), day, question)
            assert history is not None  # it answered
            computed[key] = compute_facts(history, day)
    return {seq: computed[key] for seq, key in wanted.items()}


def _result(
    sample: Sample, arrival: Arrival, facts: BillFacts | None, reasons: dict[str, str], known: set[str]
) -> CaseResult:
    answer = sample.answer
    if answer is None:
        return CaseResult(
            id=f"#{sample.seq}",
            intent="",
            locale=arrival.locale,
            status="",
            served_as_model=False,
            reason=f"http_{sample.status}" if sample.status else "no_answer",
            text="",
            plan="[]",
            findings=[],
            ttft_ms=None,
            e2e_ms=sample.e2e_ms,
            prompt_tokens=0,
            cached_tokens=0,
            completion_tokens=0,
        )
    source, intent, text = answer["source"], answer["intent"], str(answer["explanation"])
    reason = reasons.get(str(answer["answer_id"])) if source == "fallback" else None
    findings: list[Finding] = []
    if source != "fallback" and facts is not None:
        findings = key_field_errors(text, facts, intent, known=known)
    rule = reason.partition(":")[0] if reason else None
    if rule in PLAN_ERRORS:
        findings.append(Finding(kind=PLAN_ERRORS[rule], detail=f"plan: {reason}"))
    usage = (answer.get("usage") or {}) if source != "cache" else {}
    return CaseResult(
        id=f"#{sample.seq}",
        intent=intent,
        locale=answer["locale"],
        status=facts.payment.status if facts else "",
        served_as_model=source in ("model", "cache"),
        reason=rule if source == "fallback" else None,
        text=text,
        plan=msgspec.json.encode(answer.get("plan") or []).decode(),
        findings=findings,
        ttft_ms=answer["timings_ms"].get("ttft"),
        e2e_ms=sample.e2e_ms,
        prompt_tokens=usage.get("prompt_tokens", 0),
        cached_tokens=usage.get("cached_tokens", 0),
        completion_tokens=usage.get("completion_tokens", 0),
    )


def _stage(values: Sequence[float]) -> Stage:
    if not values:
        return Stage(n=0, p50=None, p90=None, p99=None)
    return Stage(n=len(values), **{f"p{q}": round(percentile(values, q), 1) for q in (50, 90, 99)})


def side(run: ProfileRun, arrivals: Sequence[Arrival], facts: dict[int, BillFacts], known: set[str]) -> Side:
    results = [_result(s, arrivals[s.seq], facts.get(s.seq), run.reasons, known) for s in run.samples]
    answers = [s.answer for s in run.samples if s.answer is not None]
    models = Counter(str(a.get("model")) for a in answers if a.get("model"))
    model = models.most_common(1)[0][0] if models else run.engine
    summary = summarize(Profile(label=run.profile.label, kind=run.engine, target=run.target), model, results)  # type: ignore[arg-type]
    sources = Counter(str(a["source"]) for a in answers)
    stages = {
        name: _stage([a["timings_ms"][key] for a in answers if key in a["timings_ms"]]) for name, key in STAGES.items()
    }
    stages[END_TO_END] = _stage([s.e2e_ms for s in run.samples if s.answer is not None])
    tokens = summary.tokens
    return Side(
        label=run.profile.label,
        engine=run.engine,
        target=run.target,
        settings=run.profile.shown(),
        cache_rows_at_start=run.cache_rows_at_start,
        engine_cache=run.engine_cache,
        requests=len(run.samples),
        answered=len(answers),
        refused=dict(Counter(str(s.status) if s.status else "no answer" for s in run.samples if s.answer is None)),
        sources=dict(sources.most_common()),
        served_share=summary.served_share,
        cache_hit_share=sources["cache"] / len(answers) if answers else 0.0,
        cached_token_share=tokens.cached / tokens.prompt if tokens.prompt else None,
        stages=stages,
        summary=summary,
    )


def answered(result: CaseResult) -> bool:
    """Whether the request got an answer (a refusal's reason is `http_<status>`, none `no_answer`)."""
    return result.reason is None or not (result.reason.startswith("http_") or result.reason == "no_answer")


def _said(sample: Sample, result: CaseResult) -> Said:
    source = None if sample.answer is None else str(sample.answer["source"])
    return Said(status=sample.status, source=source, reason=result.reason, text=result.text)


def differing(
    arrivals: Sequence[Arrival], baseline: Side, candidate: Side, runs: Sequence[ProfileRun]
) -> list[AnswerPair]:
    """The requests answered differently (another text, or answered by one profile only)."""
    pairs = []
    for b, c, rb, rc in zip(
        runs[0].samples, runs[1].samples, baseline.summary.results, candidate.summary.results, strict=True
    ):
        if b.status == c.status and rb.text == rc.text:
            continue
        a = arrivals[b.seq]
        pairs.append(
            AnswerPair(
                seq=b.seq,
                tenant=a.tenant,
                channel=a.channel,
                account_ref=a.account_ref,
                question=a.question,
                baseline=_said(b, rb),
                candidate=_said(c, rc),
            )
        )
    return pairs


async def compare(
    db: AsyncEngine,
    traffic: str,
    arrivals: Sequence[Arrival],
    baseline: ProfileRun,
    candidate: ProfileRun,
    *,
    cache: CacheState,
    speed: float,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> AbReport:
    facts = await answer_facts(db, arrivals, [baseline, candidate])
    known = set().union(*(f.labels for f in facts.values())) if facts else set()
    base, cand = side(baseline, arrivals, facts, known), side(candidate, arrivals, facts, known)
    failures = gate(base.summary, cand.summary, thresholds)
    verdict = GateResult(baseline=base.label, candidate=cand.label, passed=not failures, failures=failures)
    return AbReport(
        traffic=traffic,
        requests=len(arrivals),
        cache=cache,
        speed=speed,
        thresholds=thresholds,
        baseline=base,
        candidate=cand,
        gate=verdict,
        differing=differing(arrivals, base, cand, [baseline, candidate]),
    )
