"""`ab`: two engine profiles on the same traffic, their answers compared, the candidate gated.

    bill-assistant ab --baseline bf16.env --candidate fp8.env --traffic t.jsonl --key northbridge=KEY \
        [--cache cold|warm] [--warmup w.jsonl] [--speed 1] [--json ab.json] [--html ab.html]

Exits with status 1 when the candidate fails a threshold of `eval` (app/eval/report.py), naming each.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from app.cli.common import database_url, load_settings


@click.command("ab")
@click.option(
    "--baseline", required=True, help="The profile now in service: FILE of KEY=VALUE lines, or LABEL:KEY=VALUE,..."
)
@click.option("--candidate", required=True, help="The profile to sign off, in the same form.")
@click.option("--traffic", "traffic_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True)
@click.option("--key", "keys", multiple=True, help="SLUG=API_KEY for each tenant in the file.")
@click.option(
    "--cache",
    type=click.Choice(["cold", "warm"]),
    default="cold",
    show_default=True,
    help="cold: answer cache emptied, engine fresh; warm: then the warm-up traffic first.",
)
@click.option(
    "--warmup",
    "warmup_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Traffic that warms both profiles with --cache warm (default: the traffic itself).",
)
@click.option("--speed", default=1.0, show_default=True, help="Replay rate multiplier (2 = twice as fast).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), help="Write the JSON report.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path), help="Write the HTML report.")
def ab_cmd(
    baseline: str,
    candidate: str,
    traffic_path: Path,
    keys: tuple[str, ...],
    cache: str,
    warmup_path: Path | None,
    speed: float,
    json_path: Path | None,
    html_path: Path | None,
) -> None:
    """Replay the same traffic through two engine profiles, one after the other, from the same cache
    state, and compare their answers: served share, key-field errors, fallbacks, caches, latency.

    The answer cache of the traffic's tenants is emptied before each profile: run it on a staging
    copy of the data (DATABASE_URL), never on the production database."""
    import msgspec
    from rich.progress import Progress, TaskID

    from app.data.database import create_engine
    from app.replay.ab import CacheState, EngineProfile, ProfileRun, run_profile
    from app.replay.ab_compare import AbReport, compare
    from app.replay.ab_report import html_report, text_report
    from app.replay.run import Sample
    from app.replay.traffic import loads
    from app.settings import SettingsError

    load_settings()
    profiles = []
    for name, spec in (("--baseline", baseline), ("--candidate", candidate)):
        try:
            profile = EngineProfile.parse(spec)
            profile.settings({})  # a value the service cannot run with ends here, named
        except (ValueError, SettingsError) as exc:
            raise click.BadParameter(str(exc), param_hint=name) from None
        profiles.append(profile)
    if profiles[0].label == profiles[1].label:
        raise click.BadParameter("the two profiles need different labels (file names)", param_hint="--candidate")
    arrivals = loads(traffic_path.read_bytes())
    warmup = loads(warmup_path.read_bytes()) if warmup_path else arrivals
    key_map = dict(k.split("=", 1) for k in keys)
    if missing := {a.tenant for a in [*arrivals, *warmup]} - key_map.keys():
        raise click.ClickException(f"no --key for tenants: {', '.join(sorted(missing))}")
    url = database_url()
    state: CacheState = "warm" if cache == "warm" else "cold"

    async def run() -> AbReport:
        runs: list[ProfileRun] = []
        for profile in profiles:
            with Progress() as progress:
                bar = progress.add_task(f"{profile.label}: replaying {len(arrivals)} requests", total=len(arrivals))

                def advance(_: Sample, progress: Progress = progress, bar: TaskID = bar) -> None:
                    progress.advance(bar)

                runs.append(
                    await run_profile(
                        profile,
                        arrivals,
                        key_map,
                        database_url=url,
                        cache=state,
                        warmup=warmup,
                        speed=speed,
                        on_done=advance,
                    )
                )
        db = create_engine(url)
        try:
            return await compare(db, traffic_path.name, arrivals, runs[0], runs[1], cache=state, speed=speed)
        finally:
            await db.dispose()

    try:
        report = asyncio.run(run())
    except RuntimeError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(text_report(report))
    if json_path:
        json_path.write_bytes(msgspec.json.format(msgspec.json.encode(report)) + b"\n")
        click.echo(f"JSON report written to {json_path}")
    if html_path:
        html_path.write_text(html_report(report), encoding="utf-8")
        click.echo(f"HTML report written to {html_path}")
    if report.gate.passed:
        click.echo(f"gate passed: {report.candidate.label} is not worse than {report.baseline.label}")
    else:
        for line in report.gate.failures:
            click.echo(f"gate failed: {line}", err=True)
        raise click.exceptions.Exit(1)
