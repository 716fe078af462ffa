"""`traffic generate`, `export` and `pii-eval`, and `replay`: realistic traffic files, replayed open-loop
against the service."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import click

from app import demo
from app.cli.common import in_transaction


@click.group()
def traffic() -> None:
    """Realistic traffic files for replay."""


@traffic.command("generate")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--duration", default=60.0, show_default=True, help="Seconds of traffic.")
@click.option("--rate", default=2.0, show_default=True, help="Mean requests per second.")
@click.option("--process", type=click.Choice(["poisson", "bursty"]), default="poisson", show_default=True)
@click.option("--tenants", default=",".join(t.slug for t in demo.TENANTS), show_default=True)
@click.option("--batch-share", default=0.2, show_default=True, help="Share of requests on the batch channel.")
@click.option("--widget-share", default=0.3, show_default=True, help="Share of requests from the chat widget.")
@click.option("--seed", default=7, show_default=True)
def traffic_generate(
    out: Path,
    duration: float,
    rate: float,
    process: str,
    tenants: str,
    batch_share: float,
    widget_share: float,
    seed: int,
) -> None:
    """Write a JSONL traffic file from the seeded accounts: tenants, channels, both locales, the question mix."""
    from app.replay.traffic import dumps, generate, population

    people = in_transaction(lambda conn: population(conn, tenants.split(",")))
    if not people:
        raise click.ClickException(f"no accounts for tenants {tenants}: run `bill-assistant seed` first")
    arrivals = generate(
        people,
        rate=rate,
        duration_s=duration,
        process=process,
        batch_share=batch_share,
        widget_share=widget_share,
        seed=seed,
    )
    out.write_bytes(dumps(arrivals))
    click.echo(f"{len(arrivals)} requests over {duration:g} s ({process}) written to {out}")


_WHEN = click.DateTime(["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%d %H:%M:%S"])


@traffic.command("export")
@click.option("--since", type=_WHEN, required=True, help="From this instant (UTC unless it says), inclusive.")
@click.option("--until", type=_WHEN, required=True, help="To this instant, exclusive.")
@click.option("--tenant", help="Only this tenant's requests.")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--keep-text", is_flag=True, help="Keep the questions as typed (names, numbers, e-mails, phones).")
def traffic_export(since: datetime, until: datetime, tenant: str | None, out: Path, keep_text: bool) -> None:
    """Write a traffic file from the audit rows: the requests answered between --since and --until,
    with their timing, for `replay` (and `--speed`). Personal data in the questions is replaced by
    placeholders unless --keep-text."""
    from app.replay.traffic import dumps, export

    since, until = (when if when.tzinfo else when.replace(tzinfo=UTC) for when in (since, until))
    arrivals = in_transaction(lambda conn: export(conn, since, until, tenant, keep_text=keep_text))
    out.write_bytes(dumps(arrivals))
    span = f" over {arrivals[-1].at:g} s" if arrivals else ""
    masked = "as typed" if keep_text else "personal data masked"
    click.echo(f"{len(arrivals)} requests{span} written to {out} ({masked})")


@traffic.command("pii-eval")
@click.option("--show", is_flag=True, help="Also list each leak and each wrong mask (the tuned set's only).")
def traffic_pii_eval(show: bool) -> None:
    """The export's masking on the labelled questions (app/eval/pii_*.jsonl): recall and precision by kind
    (R found/labelled, P), and the share of questions with nothing to mask that changed."""
    from app.eval import pii as labelled

    maskers = labelled.demo_maskers()
    results = {name: labelled.tally(labelled.mask_all(labelled.load(name), maskers)) for name in labelled.SETS}
    click.echo(labelled.markdown(results))
    for miss in results["tuned"].misses if show else ():  # the blind set's stay unread: nobody tunes on them
        click.echo(miss)


@click.command("replay")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--target", required=True, help="Base URL of the service, e.g. http://127.0.0.1:8000")
@click.option("--compare", help="A second target: the same traffic is replayed there too, side by side.")
@click.option("--key", "keys", multiple=True, help="SLUG=API_KEY for each tenant in the file.")
@click.option("--speed", default=1.0, show_default=True, help="Replay rate multiplier (2 = twice as fast).")
@click.option("--slo-ttft-ms", default=2000.0, show_default=True)
@click.option("--slo-e2e-ms", default=5000.0, show_default=True)
@click.option("--report", type=click.Path(dir_okay=False, path_type=Path), help="Write a self-contained HTML report.")
def replay_cmd(
    file: Path,
    target: str,
    compare: str | None,
    keys: tuple[str, ...],
    speed: float,
    slo_ttft_ms: float,
    slo_e2e_ms: float,
    report: Path | None,
) -> None:
    """Replay a traffic file open-loop and report latency per tenant and channel."""
    from rich.progress import Progress, TaskID

    from app.replay.report import Row, Slo, html_report, summarize, table
    from app.replay.run import Sample, replay
    from app.replay.traffic import loads

    arrivals = loads(file.read_bytes())
    key_map = dict(k.split("=", 1) for k in keys)
    if missing := {a.tenant for a in arrivals} - key_map.keys():
        raise click.ClickException(f"no --key for tenants: {', '.join(sorted(missing))}")
    slo = Slo(ttft_ms=slo_ttft_ms, e2e_ms=slo_e2e_ms)
    runs: dict[str, tuple[Sequence[Sample], list[Row]]] = {}
    for url in [target] + ([compare] if compare else []):
        with Progress() as progress:
            bar = progress.add_task(f"replaying on {url}", total=len(arrivals))

            def advance(_: Sample, progress: Progress = progress, bar: TaskID = bar) -> None:
                progress.advance(bar)

            samples = asyncio.run(replay(arrivals, url, key_map, speed=speed, on_done=advance))
        runs[url] = (samples, summarize(samples, slo))
        click.echo(table(runs[url][1], title=f"{url}  ({len(arrivals)} requests, speed {speed:g}x; ms)"))
    if report:
        report.write_text(html_report(runs, slo, f"Replay of {file.name}"), encoding="utf-8")
        click.echo(f"report written to {report}")
