"""`migrate` and `import`: the schema and the banks' data."""

from __future__ import annotations

from pathlib import Path

import click

from app.cli.common import database_url, in_transaction
from app.data.database import migrate
from app.data.importer import import_file, parse
from app.errors import ImportRejected


@click.command("migrate")
def migrate_cmd() -> None:
    """Apply database migrations (DATABASE_URL, or the embedded Postgres when unset)."""
    migrate(database_url())
    click.echo("database is up to date")


@click.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def import_cmd(file: Path) -> None:
    """Import customers, accounts, statements and transactions from a JSON file."""
    try:
        doc = parse(file.read_bytes())
        report = in_transaction(lambda conn: import_file(conn, doc))
    except ImportRejected as exc:
        raise click.ClickException(f"{file}: rejected, nothing was imported: {exc}") from None
    click.echo(report.summary())
