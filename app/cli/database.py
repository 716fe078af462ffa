"""`migrate` and `import`: the schema and the banks' data."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from app.cli.common import database_url, in_driver_transaction
from app.data.csv_import import load_csv
from app.data.import_format import parse
from app.data.importer import import_file
from app.errors import ImportRejected


@click.command("migrate")
def migrate_cmd() -> None:
    """Apply database migrations (DATABASE_URL, or the embedded Postgres when unset)."""
    from app.data.database import migrate  # SQLAlchemy and Alembic: not for a nightly import's start

    migrate(database_url())
    click.echo("database is up to date")


_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.command("import")
@click.argument("file", type=_FILE, required=False)
@click.option("--tenant", help="The tenant the CSV files belong to (a JSON file names its own).")
@click.option("--customers", type=_FILE, help="CSV: ref,name,locale")
@click.option("--accounts", type=_FILE, help="CSV: ref,customer_ref,kind,currency,masked_number,opening_balance")
@click.option("--statements", type=_FILE, help="CSV: account_ref,period_start,period_end,due_date,minimum_due")
@click.option(
    "--transactions", type=_FILE, help="CSV: account_ref,ref,posted_on,kind,amount,merchant,category,description"
)
@click.option("--force", is_flag=True, help="CSV: load in full even when the files are those of the last load.")
def import_cmd(file: Path | None, tenant: str | None, force: bool, **csv_files: Path | None) -> None:
    """Import customers, accounts, statements and transactions: a JSON file, or CSV files (one per
    table, any of them) for --tenant, loaded through COPY. All or nothing: a rejected row names its
    file, line and column, and nothing is written. The CSV files of the tenant's last load, byte for
    byte, with nothing of the tenant's written since, would write nothing and are not loaded again."""
    files = {name: path for name, path in csv_files.items() if path is not None}
    if (file is None) == (not files):
        raise click.UsageError("give a JSON file, or CSV files with --customers/--accounts/--statements/--transactions")
    if file is not None:
        try:
            doc = parse(file.read_bytes())
            report = in_driver_transaction(lambda raw: import_file(raw, doc))
        except ImportRejected as exc:
            raise click.ClickException(f"{file}: rejected, nothing was imported: {exc}") from None
        click.echo(report.summary())
        return
    if tenant is None:
        raise click.UsageError("CSV files need --tenant")
    meter = LoadMeter(sum(path.stat().st_size for path in files.values()))
    try:
        with meter:
            report = in_driver_transaction(
                lambda raw: load_csv(raw, tenant, files, meter.sent, force=force, again=meter.again)
            )
    except ImportRejected as exc:
        raise click.ClickException(f"rejected, nothing was imported:\n{exc}") from None
    click.echo(report.summary())
    if not report.same_as_last_load:  # else nothing was sent: the files' digest matched
        click.echo(meter.summary(), err=True)


class LoadMeter:
    """A progress bar over the bytes of the files read, with the rows per second so far."""

    def __init__(self, size: int) -> None:
        self.rows, self.started = 0, time.perf_counter()
        self.bar = click.progressbar(length=size, label="loading", file=sys.stderr, width=30)

    def __enter__(self) -> LoadMeter:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.__exit__(None, None, None)

    def sent(self, name: str, size: int, rows: int) -> None:
        self.rows += rows
        self.bar.label = f"{name}: {self.rows:,} rows, {self.rows / (time.perf_counter() - self.started):,.0f} rows/s"
        self.bar.update(size)

    def again(self) -> None:
        """The load starts over: its rows are counted from the first file's first line again."""
        self.rows, self.bar.finished = 0, False
        self.bar.update(-self.bar.pos)

    def summary(self) -> str:
        elapsed = time.perf_counter() - self.started
        return f"{self.rows:,} rows in {elapsed:.1f} s ({self.rows / elapsed:,.0f} rows/s, checked and merged)"
