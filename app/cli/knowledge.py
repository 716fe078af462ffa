"""`knowledge`: the banks' help-centre libraries (app/domain/knowledge.py has the file form)."""

from __future__ import annotations

from pathlib import Path

import click
from sqlalchemy.ext.asyncio import AsyncConnection

from app.cli.common import in_transaction, known_tenant
from app.data.knowledge import ImportReport, import_library, library
from app.domain.knowledge import LibraryError, parse_library


@click.group()
def knowledge() -> None:
    """Load and list a bank's help-centre articles."""


@knowledge.command("import")
@click.option("--tenant", "slug", required=True, help="The bank whose library this is.")
@click.option("--draft", is_flag=True, help="Load as drafts, to be approved in the console (default: live at once).")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def import_cmd(slug: str, draft: bool, file: Path) -> None:
    """Load FILE ({"articles": [{"id", "locale", "title", "body", "tags"}]}): all of it or nothing;
    importing the same file again changes nothing."""
    try:
        articles = parse_library(file.read_bytes())
    except LibraryError as exc:
        raise click.ClickException(f"{file}: {exc}") from None

    async def work(conn: AsyncConnection) -> ImportReport:
        return await import_library(conn, await known_tenant(conn, slug), articles, draft=draft)

    report = in_transaction(work)
    state = "drafts" if draft else "live"
    click.echo(
        f"{slug}: {len(articles)} articles ({state}): {report.created} new, {report.changed} changed, "
        f"{report.unchanged} unchanged"
    )


@knowledge.command("list")
@click.option("--tenant", "slug", required=True)
def list_cmd(slug: str) -> None:
    """The library's articles: locale, id, live version, drafts waiting, title."""

    async def work(conn: AsyncConnection) -> None:
        for row in await library(conn, await known_tenant(conn, slug)):
            live = f"v{row.live_version}" if row.live_version else "-"
            click.echo(f"{row.locale}\t{row.article}\t{live}\t{row.drafts} draft(s)\t{row.title}")

    in_transaction(work)


@knowledge.command("eval")
def eval_cmd() -> None:
    """The labelled policy questions against the demo banks' libraries (run `seed` first): the right
    article served, a wrong one served, questions without an article declined, per locale; and the
    share of the demo traffic handed to a person as out of scope, before and after the library."""
    from app import demo
    from app.eval import knowledge as labelled
    from app.replay.traffic import QUESTION_MIX

    async def work(conn: AsyncConnection) -> tuple[str, tuple[float, float]]:
        tenants = {t.slug: await known_tenant(conn, t.slug) for t in demo.TENANTS}  # run `seed` first
        results = {
            name: labelled.tally(await labelled.serve(conn, tenants, labelled.load(name))) for name in labelled.SETS
        }
        return labelled.markdown(results), await labelled.traffic_shift(conn, tenants, QUESTION_MIX)

    table, (before, after) = in_transaction(work)
    click.echo(table)
    click.echo(f"\ndemo traffic read as out of scope (handed to a person): {before:.1%} without the library,")
    click.echo(f"{after:.1%} with it")
