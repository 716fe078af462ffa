"""`precompute`: recent statements' canonical answers (each cacheable intent), ahead of time, into the answer cache."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import click

from app.cli.common import database_url, load_settings
from app.data.database import create_engine


@click.command("precompute")
@click.option("--days", default=45, show_default=True, help="Statements that closed within this many days.")
@click.option("--tenant", help="Only this tenant (slug).")
@click.option("--today", type=click.DateTime(["%Y-%m-%d"]), help="The as-of date (default: today).")
def precompute_cmd(days: int, tenant: str | None, today: Any) -> None:
    """Answer recent statements' canonical questions (bill change, payment, fees) ahead of time, at batch
    priority, into the cache."""
    from datetime import date

    from rich.progress import Progress

    from app.answers.precompute import precompute, wanted
    from app.answers.service import AnswerService

    settings = load_settings()
    if settings.engine.kind == "off":
        raise click.ClickException("precomputing needs an engine: ENGINE is off")
    as_of = today.date() if today else date.today()

    async def run() -> Counter[str]:
        answers = AnswerService.build(create_engine(database_url(), settings), settings)
        sources: Counter[str] = Counter()
        try:
            todo = await wanted(answers, as_of, days, tenant)
            with Progress() as progress:
                bar = progress.add_task(f"precomputing {len(todo)} answers", total=len(todo))

                def done(answer: Any) -> None:
                    sources[answer.source] += 1
                    progress.advance(bar)

                await precompute(answers, todo, as_of, on_done=done)
        finally:
            if answers.llm is not None:
                await answers.llm.close()
            await answers.pool.close()
            await answers.db.dispose()
        return sources

    sources = asyncio.run(run())
    click.echo(
        f"{sum(sources.values())} canonical questions answered: {sources['model']} validated and cached, "
        f"{sources['fallback']} fell back (not cached), {sources['cache']} already cached"
    )
