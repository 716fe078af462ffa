"""Import files are checked whole before anything is written: a bad file is rejected, naming the field."""

from __future__ import annotations

import random
from array import array
from collections import Counter
from hashlib import blake2b
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.data.csv_lines import Records, Sieve, last_digests, repeated_keys
from app.data.import_format import parse
from app.errors import ImportRejected
from tests.factories import document


def _with(path: list[Any], value: Any) -> dict[str, Any]:
    doc = document("any")
    target: Any = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


TX0 = ["customers", 0, "accounts", 0, "transactions", 0]
ST0 = ["customers", 0, "accounts", 0, "statements", 0]


@pytest.mark.parametrize(
    ("doc", "needle"),
    [
        (_with([*TX0, "amount"], "12.001"), "$.customers[0].accounts[0].transactions[0].amount"),
        (_with([*TX0, "amount"], 12.0), "$.customers[0].accounts[0].transactions[0].amount"),
        (_with([*TX0, "amount"], "-12.00"), "amount must be positive for a purchase"),
        (_with([*TX0, "kind"], "gift"), "$.customers[0].accounts[0].transactions[0].kind"),
        (_with([*TX0, "posted_on"], "2026-02-30"), "$.customers[0].accounts[0].transactions[0].posted_on"),
        (_with([*TX0, "colour"], "red"), "unknown field `colour`"),
        (_with([*TX0, "ref"], "T-2"), "duplicate transaction ref 'T-2'"),
        (_with(["customers", 0, "locale"], "fr"), "$.customers[0].locale"),
        (_with(["customers", 0, "accounts", 0, "currency"], "euro"), "$.customers[0].accounts[0].currency"),
        (_with([*ST0, "due_date"], "2026-09-01"), "due_date is before period_end"),
        (_with([*ST0, "period_end"], "2026-10-05"), "statement periods overlap"),
        (_with(["customers", 0, "accounts", 0, "opening_balance"], None), "opening_balance"),
        ({"tenant": "x"}, "missing required field `customers`"),
    ],
)
def test_a_bad_file_is_rejected_naming_the_field(doc: dict[str, Any], needle: str) -> None:
    with pytest.raises(ImportRejected) as err:
        parse(msgspec.json.encode(doc))
    assert needle in str(err.value)


def test_not_json_is_rejected() -> None:
    with pytest.raises(ImportRejected, match="not valid JSON"):
        parse(b"{customers: nope")


WINDOW = "outside 1970-01-01..2099-12-31"
ACC0_AT = "at `$.customers[0].accounts[0]"
TX0_AT, ST0_AT = f"{ACC0_AT}.transactions[0]", f"{ACC0_AT}.statements[0]"


@pytest.mark.parametrize(
    ("doc", "needle"),
    [
        (_with([*TX0, "posted_on"], "0001-01-01"), f"{WINDOW} - {TX0_AT}.posted_on`"),
        (_with([*ST0, "due_date"], "9999-12-31"), f"{WINDOW} - {ST0_AT}.due_date`"),
        (_with([*ST0, "period_start"], "1969-12-31"), f"{ST0_AT}.period_start`"),
        (_with([*TX0, "ref"], "T-1\n"), f"{TX0_AT}.ref`"),
        (_with([*TX0, "ref"], " T-1"), f"{TX0_AT}.ref`"),
        (_with(["customers", 0, "ref"], "C-1\x00"), "at `$.customers[0].ref`"),
        (_with([*TX0, "amount"], "12.00\n"), f"{TX0_AT}.amount`"),
        (_with([*ST0, "minimum_due"], " 25.00"), f"{ST0_AT}.minimum_due`"),
        (_with(["customers", 0, "accounts", 0, "currency"], "EUR\n"), f"{ACC0_AT}.currency`"),
        (_with(["customers", 0, "name"], "Ann\x00Lee"), "at `$.customers[0].name`"),
        (_with([*TX0, "merchant"], "City\x07Gym"), f"{TX0_AT}.merchant`"),
        (_with([*TX0, "description"], "line one\nline two"), f"{TX0_AT}.description`"),
        (_with(["customers", 0, "accounts", 0, "masked_number"], "**** 1234\x9b"), f"{ACC0_AT}.masked_number`"),
        (_with(["tenant"], "bank\x00"), "at `$.tenant`"),
    ],
)  # fmt: skip
def test_out_of_range_dates_padded_values_and_control_characters_are_rejected(doc: dict[str, Any], needle: str) -> None:
    with pytest.raises(ImportRejected) as err:
        parse(msgspec.json.encode(doc))
    assert needle in str(err.value)


@pytest.mark.parametrize("when", ["1970-01-01", "2099-12-31"])
def test_the_date_window_includes_its_ends(when: str) -> None:
    doc = _with([*TX0, "posted_on"], when)
    assert parse(msgspec.json.encode(doc)).customers[0].accounts[0].transactions[0].posted_on.isoformat() == when


def test_a_ref_may_hold_inner_spaces() -> None:
    doc = _with([*TX0, "ref"], "T 1")
    assert parse(msgspec.json.encode(doc)).customers[0].accounts[0].transactions[0].ref == "T 1"


def _sieved(data: bytes, last: array[int] | None, chunk: int = 7) -> tuple[bytes, Sieve]:
    """The bytes a sieve sends for a file read `chunk` bytes at a time (lines cut anywhere)."""
    sieve = Sieve(last)
    sent = b"".join(sieve.feed(data[i : i + chunk]) for i in range(0, len(data), chunk)) + sieve.feed(b"")
    return sent, sieve


def test_a_record_is_a_line_or_the_lines_of_an_open_quoted_field() -> None:
    records = Records()
    data = b'h1,h2\r\na,"x\r\ny"\r\nb,"say ""hi"""\r\nc,d'
    got = [r for i in range(0, len(data), 5) for r in records.of(data[i : i + 5])] + records.of(b"")
    assert got == [b"h1,h2\r", b'a,"x\r\ny"\r', b'b,"say ""hi"""\r', b"c,d"]
    assert records.spans_lines


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=300).map(lambda b: bytes(b'a,"\n\r'[x % 5] for x in b)), cut=st.integers(1, 40))
def test_a_files_records_are_the_same_however_it_is_cut_into_chunks(data: bytes, cut: int) -> None:
    """Each record is a line, or the lines of an open quoted field, and a chunk with no quote says so
    (`plain`: then its records are its lines), wherever the chunks end."""
    whole = Records()
    expected = whole.of(data) + whole.of(b"")
    records, got = Records(), []
    for i in [*range(0, len(data), cut), len(data)]:
        chunk = data[i : i + cut]
        before = records._tail
        taken = records.of(chunk)
        got += taken
        if records.plain:  # no quote in what these records were made of
            assert b'"' not in before + chunk
    assert got == expected
    assert records.spans_lines == whole.spans_lines


@pytest.mark.parametrize("chunk", [7, 1 << 20], ids=["lines cut anywhere", "one chunk"])
def test_a_sieve_sends_the_lines_not_among_the_last_loads_numbered_by_their_line(chunk: int) -> None:
    first = b"ref,amount\nT-1,1.00\nT-2,2.00\nT-3,3.00\n"
    sent, sieve = _sieved(first, None, chunk)
    assert sent == first  # a first load: every line, as it is
    remembered = sieve.remembered()
    assert remembered is not None
    last = last_digests(remembered, b"ref,amount")
    assert last is not None
    assert last_digests(remembered, b"amount,ref") is None  # another header: nothing is known
    # An earlier form (blake2b-128 per line) is not read as this one: the file is loaded in full.
    earlier = b"".join(blake2b(line, digest_size=16).digest() for line in first.splitlines())
    assert last_digests(earlier, b"ref,amount") is None
    assert last_digests(remembered[:-3], b"ref,amount") is None

    nightly = b"ref,amount\nT-1,1.00\nT-2,2.50\nT-3,3.00\nT-1,1.00\nT-4,4.00"
    sent, sieve = _sieved(nightly, last, chunk)
    # T-2 changed (line 3), T-1 again (line 5: a last load's line counts once, also within one chunk),
    # T-4 new (line 6).
    assert sent == b"3,T-2,2.50\n5,T-1,1.00\n6,T-4,4.00\n"
    assert sieve.line == 6


HEADER = b"ref,amount"


def _remembered(lines: list[bytes]) -> array[int]:
    _, sieve = _sieved(b"\n".join([HEADER, *lines]) + b"\n", None, 1 << 20)
    remembered = sieve.remembered()
    assert remembered is not None
    last = last_digests(remembered, HEADER)
    assert last is not None
    return last


def _sent_lines(last: array[int], lines: list[bytes], chunk: int) -> list[bytes]:
    sent, _ = _sieved(b"\n".join([HEADER, *lines]) + b"\n", last, chunk)
    return [line.split(b",", 1)[1] for line in sent.splitlines()]


# A nightly file: the last one's lines with some changed, some added and some removed, in runs of up
# to 80 (longer than the sieve's window, so that it also loses its place).
_EDITS = st.lists(
    st.tuples(st.sampled_from(["change", "add", "remove"]), st.floats(0, 1), st.integers(1, 80)), max_size=12
)
_CHUNKS = st.sampled_from([7, 64, 1000, 1 << 20])


@settings(max_examples=300, deadline=None)
@given(size=st.integers(0, 400), edits=_EDITS, chunk=_CHUNKS)
def test_a_sieve_sends_exactly_the_changed_and_added_lines(
    size: int, edits: list[tuple[str, float, int]], chunk: int
) -> None:
    before = [b"T-%d,%d.00" % (k, k) for k in range(size)]
    after, fresh = list(before), 0
    for edit, where, run in edits:
        at = int(where * len(after))
        if edit == "change":
            after[at : at + run] = [line + b"1" for line in after[at : at + run]]
        elif edit == "add":
            after[at:at] = [b"N-%d,1.00" % (fresh + k) for k in range(run)]
            fresh += run
        else:
            del after[at : at + run]
    known = set(before)
    assert _sent_lines(_remembered(before), after, chunk) == [line for line in after if line not in known]


@settings(max_examples=300, deadline=None)
@given(size=st.integers(1, 300), moves=st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), max_size=20),
       chunk=_CHUNKS, seed=st.integers(0, 2**32))  # fmt: skip
def test_a_sieve_never_leaves_out_a_line_no_remembered_line_vouches_for(
    size: int, moves: list[tuple[float, float]], chunk: int, seed: int
) -> None:
    """Lines moved, repeated or shuffled: a line may be sent that needed not be, but every line left
    out is one of the last load's, each of those standing for one line at most."""
    before = [b"T-%d,1.00" % k for k in range(size)]
    after = list(before)
    for source, target in moves:  # a line repeated or moved elsewhere
        line = after[int(source * len(after)) % len(after)]
        after.insert(int(target * len(after)), line)
        if source < 0.5:
            after.remove(line)
    if seed % 3 == 0:  # sorted another way
        random.Random(seed).shuffle(after)
    left_out = Counter(after) - Counter(_sent_lines(_remembered(before), after, chunk))
    assert left_out <= Counter(before)


def test_a_file_sorted_another_way_is_sieved_by_set() -> None:
    """Matching in order, a shuffled file's lines would all be sent: once more than a quarter of the
    lines read are, the rest is matched against the last load's lines left, each standing for one."""
    before = [b"T-%d,1.00" % k for k in range(500)]
    after = [*before, before[250]]  # one line twice
    random.Random(7).shuffle(after)
    sent = _sent_lines(_remembered(before), after, 1000)
    assert sent.count(before[250]) == 1
    assert len(sent) < len(after) // 4


@pytest.mark.parametrize("chunk", [7, 1 << 20], ids=["lines cut anywhere", "one chunk"])
def test_a_record_spanning_lines_is_always_sent(chunk: int) -> None:
    """A quoted field holding a newline (a file that is refused, so never a last load's) is sent, and
    the lines around it are matched as ever; CRLF line ends are part of a line."""
    lines = [b'T-%d,"%d.00"\r' % (k, k) for k in range(200)]
    last = _remembered(lines)
    nightly = [*lines[:100], b'T-X,"1\r\n2"\r', *lines[100:150], lines[150].replace(b".00", b".50"), *lines[151:]]
    sent, _ = _sieved(b"\n".join([HEADER, *nightly]) + b"\n", last, chunk)
    assert sent == b'102,T-X,"1\r\n2"\r\n153,T-150,"150.50"\r\n'


def test_repeated_keys_are_found_across_the_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(b'amount,ref,account_ref\r\n1.00,T-1,A-1\r\n"2,00",T-2,A-1\r\n3.00,"T-1",A-2\r\n')
    columns = (2, 1)  # account_ref, ref (the last column: before its CR)
    assert not repeated_keys(path, columns, 3, {(b"A-1", b"T-2"): 3, (b"A-2", b"T-1"): 4})
    assert repeated_keys(path, columns, 3, {(b"A-1", b"T-1"): 4})  # line 2 has it
    assert repeated_keys(path, columns, 3, {(b"A-2", b"T-1"): 2})  # quoted, on line 4


def test_repeated_keys_in_a_file_without_quotes(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(b"account_ref,ref,amount\nA-1,T-1,1.00\nA-1,T-2,2.00\nA-2,T-1,3.00")
    assert not repeated_keys(path, (0, 1), 3, {(b"A-1", b"T-2"): 3, (b"A-3", b"T-1"): 6})
    assert repeated_keys(path, (0, 1), 3, {(b"A-2", b"T-1"): 6})  # line 4 has it
    path.write_bytes(path.read_bytes() + b"\nA-2")  # line 5 has no ref: said to repeat one, to be safe
    assert repeated_keys(path, (0, 1), 3, {(b"A-3", b"T-1"): 6})
