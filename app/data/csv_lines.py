"""A CSV file read as its records' bytes, for a load that sends Postgres only the lines that changed
since the tenant's last load (app/data/csv_import.py; what a load remembers: app/data/bulk_loads.py).

A record is one line, or several while a quoted field is open: Postgres splits a CSV file the same
way (every `"` opens or closes a quoted section), so record N here is the file's row N. A record's
digest is XXH3-64 of its bytes: a line equal to one of the last load's, under the same header, says
what that load stored. A fast hash, not a cryptographic one: the files are the bank's own, and the
chance that a changed or new line takes a remembered one's digest (and is not sent) is about
8,000 x 400,000 / 2^64 (2e-10) for a nightly file of 400,000 lines, 2% of them changed or new. A
record of another form (an earlier load's 16-byte digests, or another byte order) never matches its
header's digest, so that file is loaded in full.
"""

from __future__ import annotations

import csv
import re
from array import array
from collections.abc import Callable, Iterator
from operator import itemgetter
from pathlib import Path
from typing import BinaryIO

from xxhash import xxh3_64_intdigest as digest

from app.data.csv_format import CHUNK
from app.data.csv_matching import Matcher

DIGESTS = "Q"  # an array of records' digests, as stored: one unsigned 64-bit integer each


class Records:
    """Splits a file's chunks into whole records, in order."""

    def __init__(self) -> None:
        self._tail = b""
        self._open: bytes | None = None  # the lines so far of a record whose quoted field is open
        self.spans_lines = False  # some record spans lines (a file that is rejected: a field holds a newline)
        self.plain = True  # the last records returned hold no quote: each is a line, split by commas

    def of(self, chunk: bytes) -> list[bytes]:
        """The records this chunk completes; an empty chunk (the end of the file): the rest."""
        if chunk:
            tail, lines = self._tail, chunk.split(b"\n")
            lines[0] = tail + lines[0]  # the last chunk's tail joins the first line, not the whole chunk
            self._tail = lines.pop()
            quoted = b'"' in tail or b'"' in chunk
        else:
            lines, self._tail = ([self._tail] if self._tail else []), b""
            quoted = bool(lines) and b'"' in lines[0]
        self.plain = self._open is None and not quoted
        if self.plain:
            return lines  # the common case: no quotes, a line is a record
        records = []
        for line in lines:
            odd = line.count(b'"') % 2
            if self._open is not None:
                self._open += b"\n" + line
                if odd:
                    records.append(self._open)
                    self._open = None
            elif odd:
                self._open, self.spans_lines = line, True
            else:
                records.append(line)
        if not chunk and self._open is not None:
            records.append(self._open)
        return records


class Screen:
    """Whether every line of a file matches its table's plain patterns (app/data/csv_format.py
    `Table.plain`), in the columns' order: then no line can fail a check of its own, and a first load
    skips those checks in SQL (a scan of the whole file, 2 s at 400,000 lines; the screen reads each
    chunk with one regex, while Postgres copies the last). A line with a quote is not screened: the
    file is checked in SQL."""

    def __init__(self, plain: dict[str, str], columns: list[str]) -> None:
        line = ",".join(f"(?:{plain[c]})" for c in columns) + "\r?"
        self._lines = re.compile(f"(?:{line}\n)*{line}")
        self.clean = True

    def check(self, records: list[bytes], plain: bool) -> None:
        if not self.clean or not records:
            return
        try:
            self.clean = plain and self._lines.fullmatch(b"\n".join(records).decode()) is not None
        except UnicodeDecodeError:
            self.clean = False


class Sieve:
    """The records of a file to send, numbered by their line as the file's row (header: line 1), with
    the digests of all of them. `last`: the digests of the last load's records, in its order, that
    need not be sent (matched by app/data/csv_matching.py; none spans lines, as a file with such a
    record is refused, so a record that does is sent); None sends every record, as it is (the header
    too), and only digests them. Given a `screen`, it screens the records it sends."""

    def __init__(self, last: array[int] | None, screen: Screen | None = None) -> None:
        self.matcher = None if last is None else Matcher(last)
        self.screen = screen
        self.records = Records()
        self.header: bytes | None = None
        self.digests = array(DIGESTS)
        self.line = 1  # the last record's line
        self._held: tuple[list[bytes], array[int]] = ([], array(DIGESTS))  # records read, not yet matched

    def take(self, chunk: bytes) -> tuple[list[bytes], array[int]]:
        """The records this chunk completes (the header set aside), screened if all are sent (else
        `feed` screens those it sends), and their digests."""
        records = self.records.of(chunk)
        if self.header is None and records:
            self.header = records.pop(0)
        if self.screen is not None and self.matcher is None:
            self.screen.check(records, self.records.plain)
        digests = array(DIGESTS, map(digest, records))
        self.digests.extend(digests)
        self.line += len(records)
        return records, digests

    def feed(self, chunk: bytes) -> bytes:
        records, digests = self.take(chunk)
        if self.matcher is None:
            return chunk
        records, digests = self._held[0] + records, self._held[1] + digests
        first = self.line - len(records) + 1
        send, done = self.matcher.match(digests, end=not chunk)
        self._held = records[done:], digests[done:]
        if self.screen is not None:
            self.screen.check([records[k] for k in send], self.records.plain)
        return b"".join(b"%d,%s\n" % (first + k, records[k]) for k in send)

    def remembered(self) -> bytes | None:
        """The header's digest, then every record's: what the next load compares with; None when a
        record spans lines (never stored: such a file is rejected)."""
        if self.header is None or self.records.spans_lines:
            return None
        return (array(DIGESTS, [digest(self.header)]) + self.digests).tobytes()


def last_digests(remembered: bytes, header: bytes) -> array[int] | None:
    """The record digests of a remembered load, in its order, if its header was this one."""
    stored = array(DIGESTS)
    if len(remembered) % stored.itemsize:
        return None
    stored.frombytes(remembered)
    if not stored or stored[0] != digest(header):
        return None
    return stored[1:]


def unchanged_file(path: Path, remembered: bytes, progress: Callable[[int, int], None]) -> Sieve | None:
    """The file read through a sieve of the last load's lines, if every line was among them (each
    once, under the same header), each chunk's bytes and rows counted by `progress`; else None."""
    last = last_digests(remembered, first_line(path))
    if last is None:
        return None
    sieve = Sieve(last)
    with path.open("rb") as f:
        for chunk in _read(f):
            line = sieve.line
            if sieve.feed(chunk):
                return None  # loaded in full: counted as it is read again
            progress(len(chunk), sieve.line - line)
    return sieve


def first_line(path: Path) -> bytes:
    with path.open("rb") as f:
        return f.readline().rstrip(b"\n")


def _key(record: bytes, positions: tuple[int, ...]) -> tuple[bytes, ...] | None:
    """The values at `positions` as Postgres reads them from a record with quotes; None if it cannot
    be read."""
    try:
        fields = next(csv.reader([record.rstrip(b"\r").decode("utf-8", errors="replace")]))
        return tuple(fields[p].encode() for p in positions)
    except (csv.Error, StopIteration, IndexError):
        return None


def _keys(
    batch: list[bytes], pick: Callable[[list[bytes]], tuple[bytes, ...]], cut: int, strip: bool
) -> list[tuple[bytes, ...]] | None:
    """The keys of records without quotes; None when one is too short (the slow path says why)."""
    try:
        if strip:
            return [pick(r.rstrip(b"\r").split(b",", cut)) for r in batch]
        return [pick(r.split(b",", cut)) for r in batch]
    except IndexError:
        return None


def repeated_keys(path: Path, positions: tuple[int, ...], columns: int, lines: dict[tuple[bytes, ...], int]) -> bool:
    """Whether a row of the file other than the one on `lines`' line has one of its keys (the
    values of the columns at `positions`): the whole file's duplicate check, for the keys of the
    rows that were sent. (A record not read as Postgres would is said to repeat one, to be safe.)"""
    if not lines:
        return False
    pick = itemgetter(*positions) if len(positions) > 1 else lambda fields: (fields[positions[0]],)
    records, line, last = Records(), 1, columns - 1
    cut, need = -1 if last in positions else max(positions) + 1, max(positions)
    with path.open("rb") as f:
        for chunk in _read(f):
            batch = records.of(chunk)
            if line == 1 and batch:
                batch = batch[1:]  # the header
            keys = _keys(batch, pick, cut, last in positions) if records.plain else None
            if keys is not None:  # the common case: the rows with one of the keys found in C, then each asked
                hits = list(filter(lines.__contains__, keys))
                own = sum(0 < lines[k] - line <= len(keys) and keys[lines[k] - line - 1] == k for k in set(hits))
                if own != len(hits):  # a key twice, or on another line than its own
                    return True
                line += len(batch)
                continue
            for number, record in enumerate(batch, line + 1):
                if b'"' in record:
                    key = _key(record, positions)
                else:
                    fields = record.split(b",", cut)  # no further than the last key
                    if last in positions:  # the last column ends where the line does (CRLF too)
                        fields[last] = fields[last].rstrip(b"\r")
                    key = pick(fields) if len(fields) > need else None
                if key is None or lines.get(key, number) != number:
                    return True
            line += len(batch)
    return False


def _read(f: BinaryIO) -> Iterator[bytes]:
    while chunk := f.read(CHUNK):
        yield chunk
    yield b""
