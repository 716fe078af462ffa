"""`eval`: the key-field gate. Runs the golden set against engine profiles and compares two of them.

    bill-assistant eval --profile base=embedded --profile q8=embedded:/models/x.Q8_0.gguf \
        --baseline base --candidate q8 --json eval.json --html eval.html

Exits with status 1 when the candidate fails a threshold (app/eval/report.py), naming each one.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from app.cli.common import load_settings


@click.command("eval")
@click.option(
    "--profile",
    "profiles",
    multiple=True,
    required=True,
    help="LABEL=embedded[:/path/to.gguf] or LABEL=sglang:http://host:port (repeatable).",
)
@click.option("--baseline", help="The label of the profile to compare against.")
@click.option("--candidate", help="The label of the profile that must not be worse.")
@click.option("--limit", type=click.IntRange(min=1), help="Run only the first N golden cases.")
@click.option("--concurrency", type=click.IntRange(min=1), default=2, show_default=True)
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), help="Write the JSON report.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path), help="Write the HTML report.")
@click.option(
    "--answers",
    "answers_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write ten answers per locale of the first profile beside the deterministic ones (Markdown).",
)
def eval_cmd(
    profiles: tuple[str, ...],
    baseline: str | None,
    candidate: str | None,
    limit: int | None,
    concurrency: int,
    json_path: Path | None,
    html_path: Path | None,
    answers_path: Path | None,
) -> None:
    """Run the golden set against engine profiles; with --baseline and --candidate, gate the candidate."""
    import msgspec

    from app.eval import golden
    from app.eval.dialogues import run_dialogue
    from app.eval.report import DEFAULT_THRESHOLDS, GateResult, Report, Summary, gate, html_report, summarize, table
    from app.eval.run import Profile, demo_policy, open_engine, run_profile
    from app.prompts import PROMPT_VERSION

    settings = load_settings()
    try:
        parsed = [Profile.parse(p) for p in profiles]
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--profile") from None
    labels = [p.label for p in parsed]
    if len(set(labels)) != len(labels):
        raise click.BadParameter("each profile needs its own label", param_hint="--profile")
    if (baseline is None) != (candidate is None):
        raise click.UsageError("--baseline and --candidate go together")
    for name, label in (("--baseline", baseline), ("--candidate", candidate)):
        if label is not None and label not in labels:
            raise click.BadParameter(f"no profile is labelled {label!r}", param_hint=name)

    cases = golden.load(limit=limit)
    dialogues = golden.load_dialogues() if limit is None else []
    known = golden.merchants()

    async def evaluate(profile: Profile) -> Summary:
        engine = open_engine(
            profile, parallel=concurrency, threads=settings.engine.threads, timeout_s=settings.engine.timeout_s
        )
        try:
            results = await run_profile(
                engine,
                cases,
                known=known,
                chat_template=settings.engine.chat_template,
                max_tokens=settings.engine.max_tokens,
                timeout_s=settings.engine.timeout_s,
                concurrency=concurrency,
            )
            turns = [
                turn
                for dialogue in dialogues
                for turn in await run_dialogue(
                    engine,
                    dialogue,
                    policy=demo_policy(),
                    chat_template=settings.engine.chat_template,
                    max_tokens=settings.engine.max_tokens,
                    timeout_s=settings.engine.timeout_s,
                )
            ]
        finally:
            await engine.close()
        return summarize(profile, engine.model, results, turns)

    summaries = []
    for profile in parsed:
        click.echo(
            f"running {len(cases)} golden cases and {len(dialogues)} dialogues on {profile.label} ({profile.kind})",
            err=True,
        )
        summaries.append(asyncio.run(evaluate(profile)))
    click.echo(table(summaries))

    verdict = None
    if baseline is not None and candidate is not None:
        by_label = {s.label: s for s in summaries}
        failures = gate(by_label[baseline], by_label[candidate])
        verdict = GateResult(baseline=baseline, candidate=candidate, passed=not failures, failures=failures)
    report = Report(
        golden_cases=len(cases),
        prompt_version=PROMPT_VERSION,
        thresholds=DEFAULT_THRESHOLDS,
        profiles=summaries,
        gate=verdict,
    )
    if json_path:
        json_path.write_bytes(msgspec.json.format(msgspec.json.encode(report)) + b"\n")
        click.echo(f"JSON report written to {json_path}")
    if html_path:
        html_path.write_text(html_report(report), encoding="utf-8")
        click.echo(f"HTML report written to {html_path}")
    if answers_path:
        from app.eval.answers import answers_markdown, dialogues_markdown

        first = summaries[0]
        text = answers_markdown(first.label, cases, first.results, policy=demo_policy(), per_locale=10)
        text += "\n" + dialogues_markdown(dialogues, first.dialogue_turns, policy=demo_policy())
        answers_path.write_text(text, encoding="utf-8")
        click.echo(f"answers written to {answers_path}")
    if verdict is not None:
        if verdict.passed:
            click.echo(f"gate passed: {candidate} is not worse than {baseline}")
        else:
            for line in verdict.failures:
                click.echo(f"gate failed: {line}", err=True)
            raise click.exceptions.Exit(1)
