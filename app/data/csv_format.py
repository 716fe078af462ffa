"""The CSV files of a bulk load: their columns, the checks of a row on its own (the JSON importer's
rules, app/data/import_format.py, written as SQL over the staged text), and how each table merges.
app/data/csv_import.py stages, checks and merges them."""

from __future__ import annotations

from dataclasses import dataclass

from app import locales
from app.domain.vocabulary import TRANSACTION_KINDS

CHUNK = 1 << 20  # bytes read from a file at a time (a COPY message, a digest update)

_CONTROL = r"[\x01-\x1f\x7f-\x9f]"  # NUL never reaches here: COPY refuses it as text
_EDGE = r"[^\s\x01-\x1f\x7f-\x9f]"
_REF = rf"^{_EDGE}([^\x01-\x1f\x7f-\x9f]*{_EDGE})?$"
_AMOUNT = r"^-?[0-9]{1,12}(\.[0-9]{1,2})?$"
_ZERO = r"^-?0+(\.0+)?$"
_ISO = "'^[0-9]{4}-[0-9]{2}-[0-9]{2}$'"
# A valid date on days 1-28 (every month has them), 1970-2099: the rest take the full check.
_EARLY_IN_MONTH = r"^(19[7-9][0-9]|20[0-9][0-9])-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])$"


def _in(values: tuple[str, ...]) -> str:
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"


def _date_ok(col: str) -> str:
    """A date from 1970-01-01 to 2099-12-31, written YYYY-MM-DD, checked without casting (a bad cast
    would abort the statement instead of naming the line)."""
    y, m, d = (f"CAST(substr({col}, {a}, {n}) AS int)" for a, n in ((1, 4), (6, 2), (9, 2)))
    return (
        f"CASE WHEN {col} ~ '{_EARLY_IN_MONTH}' THEN true"  # most dates: one regex, no casts
        rf" WHEN {col} !~ '^[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}$' THEN false"
        f" WHEN {y} NOT BETWEEN 1970 AND 2099 OR {m} NOT BETWEEN 1 AND 12 THEN false"
        f" ELSE {d} BETWEEN 1 AND EXTRACT(day FROM make_date({y}, {m}, 1) + interval '1 month - 1 day') END"
    )


def _text(col: str, longest: int, required: bool = False) -> list[tuple[str, str, str]]:
    checks = [(col, f"more than {longest} characters", f"char_length({col}) > {longest}")]
    checks.append((col, "contains a control character", f"{col} ~ '{_CONTROL}'"))
    if required:
        checks.insert(0, (col, "must not be empty", f"{col} IS NULL OR {col} = ''"))
    return checks


def _ref(col: str) -> list[tuple[str, str, str]]:
    return [
        (col, "must not be empty", f"{col} IS NULL"),
        (
            col,
            "must be 1-64 characters, no blank at either end, no control character",
            f"char_length({col}) > 64 OR {col} !~ '{_REF}'",
        ),
    ]


def _date(col: str) -> list[tuple[str, str, str]]:
    return [(col, "must be a date YYYY-MM-DD from 1970-01-01 to 2099-12-31", f"{col} IS NULL OR NOT ({_date_ok(col)})")]


def _amount(col: str) -> list[tuple[str, str, str]]:
    return [
        (col, "must be an amount like 12.50 (up to 12 digits, 2 decimals)", f"{col} IS NULL OR {col} !~ '{_AMOUNT}'")
    ]


# What a first load's screen (app/data/csv_lines.py `Screen`) lets through without the SQL checks
# above: per column, a Python regex for values those checks accept for certain. Each accepts a subset
# of what its checks accept, never more (tests/integration/data/test_csv_screen.py holds them to the
# SQL); a value it does not match (a negative adjustment, a ref ending in a dot, the 29th of February
# 2100) only sends its file through the SQL checks, as before. [0-9], not \d: \d matches every script's
# digits.
_EDGE_CHAR = r"[^\W_]"  # a letter or digit: never a blank nor a control character, in any script
_PLAIN_CHAR = r'[^\x00-\x1f\x7f-\x9f",]'  # no control character; no comma or quote (a plain CSV field)
_REF_PLAIN = rf"{_EDGE_CHAR}(?:{_PLAIN_CHAR}{{0,62}}{_EDGE_CHAR})?"
_YEAR = "(?:19[7-9][0-9]|20[0-9][0-9])"
_LEAP_YEAR = "(?:19(?:7[26]|8[048]|9[26])|20(?:[02468][048]|[13579][26]))"
_DATE_PLAIN = (
    rf"(?:{_YEAR}-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)"
    rf"|{_LEAP_YEAR}-02-29)"
)
_POSITIVE_PLAIN = r"(?:[1-9][0-9]{0,11}(?:\.[0-9]{1,2})?|0\.(?:[1-9][0-9]?|0[1-9]))"  # whatever the kind
_NOT_NEGATIVE_PLAIN = r"(?:[0-9]{1,12}(?:\.[0-9]{1,2})?)"


def _text_plain(longest: int) -> str:
    return f"{_PLAIN_CHAR}{{0,{longest}}}"


@dataclass(frozen=True)
class Table:
    """One CSV file: its columns, the checks of a row on its own (column, message, SQL that is true
    when the row is wrong), and its merge: `source` selects the table's columns from the staged rows
    (:tenant_id the tenant), matched on `keys` (the file's own key is `file_key`), written in `values`."""

    name: str
    columns: tuple[str, ...]
    checks: list[tuple[str, str, str]]
    file_key: tuple[str, ...]
    source: str
    keys: tuple[str, ...]
    values: tuple[str, ...]
    parents: tuple[str, str] | None = None  # (column, table): the stored or staged parent a row names
    # A staged row (s) identical, as text, to a stored row of the tenant: `same` joins what it reads
    # in USING and tests it in WHERE. A load keeps only the rows that differ, so a nightly file costs
    # what changed (the big table only).
    same: tuple[str, str] | None = None
    lines: bool = False  # a statement's lines: the statements' summaries follow them (see `merge`)
    # Per column, what a first load's screen lets through (see _REF_PLAIN), and the checks that still
    # run when every line of the file went through: those across columns the patterns do not cover.
    plain: dict[str, str] | None = None
    after_screen: tuple[tuple[str, str, str], ...] = ()

    def merge(self) -> str:
        """Changed rows updated, new ones inserted, identical ones left alone (no new row version,
        no trigger work); counts created, updated, staged. Cheaper than INSERT ... ON CONFLICT,
        which tries every row's insert first. A statement's lines (`lines`) are left by the
        transactions trigger to the loader (migration 0020): their accounts' changed days, old and
        new, go to merged_spans, for one statement_lines_changed after the merge; and each staged
        line finds its stored row by key, one index lookup (a few changed lines of a large table:
        a hash join would read the whole table, twice)."""
        match = " AND ".join(f"t.{k} = src.{k}" for k in self.keys)
        columns = ", ".join((*self.keys, *self.values))
        stored, staged = (", ".join(f"{alias}.{v}" for v in self.values) for alias in ("t", "src"))
        differs = f"({stored}) IS DISTINCT FROM ({staged})"
        source, returning, spans = self.source, "1", ""
        new, found = f"NOT EXISTS (SELECT FROM {self.name} t WHERE {match})", match
        if self.lines:
            by_key = " AND ".join(f"t.{k} = s0.{k}" for k in self.keys)
            source = f"SELECT s0.*, (SELECT t.id FROM {self.name} t WHERE {by_key}) AS stored_id FROM ({source}) s0"
            new = "src.stored_id IS NULL"
            found = "t.id = src.stored_id AND t.id = ANY(ARRAY(SELECT stored_id FROM src WHERE stored_id IS NOT NULL))"
            returning = "t.id, t.account_id, t.posted_on, t.kind"
            spans = f""",
old AS (SELECT t.account_id, t.posted_on, t.kind FROM {self.name} t JOIN src ON {found} WHERE {differs}),
changed AS (
    SELECT account_id, posted_on, kind FROM updated
    UNION ALL SELECT account_id, posted_on, kind FROM old  -- what `updated` read: the same rows, before
    UNION ALL SELECT account_id, posted_on, kind FROM created
),
spans AS (
    INSERT INTO merged_spans SELECT jsonb_agg(jsonb_build_object(
        'account_id', account_id, 'first_day', first_day, 'payment', payment, 'days', days))
    FROM (SELECT account_id, MIN(posted_on) AS first_day, bool_or(kind = 'payment') AS payment,
                 array_agg(DISTINCT posted_on) AS days
          FROM changed GROUP BY account_id) per_account
    HAVING COUNT(*) > 0
)"""
        return f"""WITH src AS ({source}),
updated AS (
    UPDATE {self.name} t SET {", ".join(f"{v} = src.{v}" for v in self.values)} FROM src
    WHERE {found} AND {differs}
    RETURNING {returning}
),
created AS (
    INSERT INTO {self.name} AS t ({columns}) SELECT {columns} FROM src WHERE {new}
    RETURNING {returning}
){spans}
SELECT (SELECT count(*) FROM created), (SELECT count(*) FROM updated), (SELECT count(*) FROM src)"""

    def insert(self) -> str:
        """A first load's merge (the tenant has no row in the table): every staged row is new, so none
        is looked for among the stored ones."""
        columns = ", ".join((*self.keys, *self.values))
        return f"INSERT INTO {self.name} ({columns}) SELECT {columns} FROM ({self.source}) src"


CUSTOMERS = Table(
    "customers",
    ("ref", "name", "locale"),
    [
        *_ref("ref"),
        *_text("name", 200, required=True),
        # The locales with a folder (app/locales.py) when the service starts.
        (
            "locale",
            f"must be one of {', '.join(locales.locales())}",
            f"locale IS NULL OR locale NOT IN {_in(locales.locales())}",
        ),
    ],
    ("ref",),
    "SELECT CAST(:tenant_id AS bigint) AS tenant_id, ref, name, locale FROM stage_customers",
    ("tenant_id", "ref"),
    ("name", "locale"),
)
ACCOUNTS = Table(
    "accounts",
    ("ref", "customer_ref", "kind", "currency", "masked_number", "opening_balance"),
    [
        *_ref("ref"),
        *_ref("customer_ref"),
        *_text("kind", 32, required=True),
        ("currency", "must be three capital letters", "currency IS NULL OR currency !~ '^[A-Z]{3}$'"),
        *_text("masked_number", 32, required=True),
        *_amount("opening_balance"),
    ],
    ("ref",),
    """SELECT c.tenant_id, s.ref, c.id AS customer_id, s.kind, s.currency, s.masked_number,
              CAST(s.opening_balance AS numeric) AS opening_balance
       FROM stage_accounts s JOIN customers c ON c.tenant_id = :tenant_id AND c.ref = s.customer_ref""",
    ("tenant_id", "ref"),
    ("customer_id", "kind", "currency", "masked_number", "opening_balance"),
    parents=("customer_ref", "customers"),
)
# Dates written YYYY-MM-DD compare as text.
_PERIOD_ORDER = (
    (
        "period_start",
        "is after period_end",
        f"period_start ~ {_ISO} AND period_end ~ {_ISO} AND period_start > period_end",
    ),
    ("due_date", "is before period_end", f"due_date ~ {_ISO} AND period_end ~ {_ISO} AND due_date < period_end"),
)
STATEMENTS = Table(
    "statements",
    ("account_ref", "period_start", "period_end", "due_date", "minimum_due"),
    [
        *_ref("account_ref"),
        *_date("period_start"),
        *_date("period_end"),
        *_date("due_date"),
        *_amount("minimum_due"),
        ("minimum_due", "must not be negative", f"minimum_due ~ '^-' AND minimum_due !~ '{_ZERO}'"),
        *_PERIOD_ORDER,
    ],
    ("account_ref", "period_end"),
    """SELECT a.tenant_id, a.id AS account_id, CAST(s.period_end AS date) AS period_end,
              CAST(s.period_start AS date) AS period_start, CAST(s.due_date AS date) AS due_date,
              CAST(s.minimum_due AS numeric) AS minimum_due
       FROM stage_statements s JOIN accounts a ON a.tenant_id = :tenant_id AND a.ref = s.account_ref""",
    ("tenant_id", "account_id", "period_end"),
    ("period_start", "due_date", "minimum_due"),
    parents=("account_ref", "accounts"),
    plain={
        "account_ref": _REF_PLAIN,
        "period_start": _DATE_PLAIN,
        "period_end": _DATE_PLAIN,
        "due_date": _DATE_PLAIN,
        "minimum_due": _NOT_NEGATIVE_PLAIN,
    },
    after_screen=_PERIOD_ORDER,
)
TRANSACTIONS = Table(
    "transactions",
    ("account_ref", "ref", "posted_on", "kind", "amount", "merchant", "category", "description"),
    [
        *_ref("account_ref"),
        *_ref("ref"),
        *_date("posted_on"),
        (
            "kind",
            f"must be one of {', '.join(TRANSACTION_KINDS)}",
            f"kind IS NULL OR kind NOT IN {_in(TRANSACTION_KINDS)}",
        ),
        *_amount("amount"),
        ("amount", "an adjustment must not be zero", f"kind = 'adjustment' AND amount ~ '{_ZERO}'"),
        (
            "amount",
            "must be positive (only adjustments are signed)",
            f"kind <> 'adjustment' AND (amount ~ '^-' OR amount ~ '{_ZERO}')",
        ),
        *_text("merchant", 200),
        *_text("category", 64),
        *_text("description", 500),
    ],
    ("account_ref", "ref"),
    """SELECT a.tenant_id, a.id AS account_id, s.ref, CAST(s.posted_on AS date) AS posted_on, s.kind,
              CAST(s.amount AS numeric) AS amount, s.merchant, s.category, s.description
       FROM stage_transactions s JOIN accounts a ON a.tenant_id = :tenant_id AND a.ref = s.account_ref""",
    ("tenant_id", "account_id", "ref"),
    ("posted_on", "kind", "amount", "merchant", "category", "description"),
    parents=("account_ref", "accounts"),
    lines=True,
    plain={
        "account_ref": _REF_PLAIN,
        "ref": _REF_PLAIN,
        "posted_on": _DATE_PLAIN,
        "kind": f"(?:{'|'.join(TRANSACTION_KINDS)})",
        "amount": _POSITIVE_PLAIN,
        "merchant": _text_plain(200),
        "category": _text_plain(64),
        "description": _text_plain(500),
    },
    same=(
        "transactions t JOIN accounts a ON a.id = t.account_id",
        "t.tenant_id = :tenant_id AND a.ref = s.account_ref AND t.ref = s.ref AND (CAST(t.posted_on AS text),"
        " t.kind, CAST(t.amount AS text), t.merchant, t.category, t.description) IS NOT DISTINCT FROM"
        " (s.posted_on, s.kind, s.amount, s.merchant, s.category, s.description)",
    ),
)
TABLES = {t.name: t for t in (CUSTOMERS, ACCOUNTS, STATEMENTS, TRANSACTIONS)}  # in the order they load
