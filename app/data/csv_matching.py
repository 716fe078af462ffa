"""A nightly file's records matched to the tenant's last load's, by digest (app/data/csv_lines.py
`Sieve`): which records must be sent to Postgres, and which a remembered record vouches for.

A nightly file is the last one with lines changed, added and removed here and there, so records are
matched in order: a record whose digest is that of the remembered record at its place needs not be
sent, and after one that is not, the place is found again among the next WINDOW records of both. The
long equal runs are compared in C (array slices), so a 400,000-line file with 2% of its lines changed
or new costs a few hundredths of a second more than digesting it (docs/benchmarks.md). A file sorted
another way is matched, from where that shows, against a set of the remembered records not used:
slower, never wrong. Either way each remembered record vouches for one record at most (a line written
twice is sent the second time), and a record that is sent though it needed not be costs only its
merge, which finds it unchanged.
"""

from __future__ import annotations

from array import array
from typing import TypeAlias

Digests: TypeAlias = "array[int]"  # records' digests, one unsigned 64-bit integer each (app/data/csv_lines.py)

WINDOW = 64  # how far ahead the place is looked for again after a record that is not known


class Matcher:
    """Matches the records of one file, given a chunk at a time, to `last`, the digests of the last
    load's records in its order."""

    def __init__(self, last: Digests) -> None:
        self.last = last
        self._at = 0  # the place in `last` of the next record
        self._done = 0  # records done (sent or vouched for)
        self._sent = 0  # records sent while in order
        self._passed: list[int] = []  # remembered records passed over unused (changed or removed)
        self._rest: set[int] | None = None  # the remembered records unused, once out of order

    def match(self, new: Digests, *, end: bool) -> tuple[list[int], int]:
        """The indexes in `new` (the digests of the records not done yet, in order) of the records to
        send, and how many of `new` are done: the others, whose place is not found within the records
        given so far, are to be given again with the next chunk's (all are done at the file's `end`)."""
        send: list[int] = []
        if self._rest is None:
            send, i = self._in_order(new, end=end)
        else:
            i = 0
        if self._rest is not None:
            send.extend(self._by_set(new[i:], i))
            i = len(new)
        self._done += i
        return send, i

    def _in_order(self, new: Digests, *, end: bool) -> tuple[list[int], int]:
        last, at = self.last, self._at
        send: list[int] = []
        i, n, m = 0, len(new), len(last)
        while i < n:
            i, at = _equal_run(new, i, last, at)
            if i == n:
                break
            if at == m and _keeps_order(self._sent + len(send) + n - i, self._done + n):  # the rest is new
                send.extend(range(i, n))
                i = n
                break
            if at == m or not _keeps_order(self._sent + len(send), self._done + i):
                self._rest = {*self._passed, *last[at:]}
                break
            if i + 1 < n and at + 1 < m and new[i + 1] == last[at + 1]:  # the common case: one changed
                send.append(i)
                self._passed.append(last[at])
                i, at = i + 1, at + 1
                continue
            if i + WINDOW > n and not end:  # the records to come may show where this one is
                break
            if found := _place(new, i, last, at):  # new[i:q] changed or added, last[at:r] changed or removed
                q, r = found
                send.extend(range(i, q))
                self._passed.extend(last[at:r])
                i, at = q, r
            elif at + WINDOW <= m:  # lost
                self._rest = {*self._passed, *last[at:]}
                break
            else:  # none of the remembered records left is this one
                send.append(i)
                i += 1
        self._at, self._sent = at, self._sent + len(send)
        return send, i

    def _by_set(self, new: Digests, offset: int) -> list[int]:
        """The indexes (from `offset`) of the records that none of the remembered ones unused is."""
        rest, send = self._rest, []
        assert rest is not None
        for k, d in enumerate(new, offset):
            if d in rest:
                rest.remove(d)
            else:
                send.append(k)
        return send


def _keeps_order(sent: int, read: int) -> bool:
    """Whether records are still matched in order after `sent` of the first `read` were sent: not when
    more than a quarter of them were (a file sorted another way)."""
    return sent <= max(read // 4, WINDOW)


def _equal_run(new: Digests, i: int, last: Digests, at: int) -> tuple[int, int]:
    """Both places moved past the records equal in both: blocks compared in C, doubling while equal,
    and the first difference in a block found by halving it (no digest read into Python)."""
    size = 64
    while True:
        a, b = new[i : i + size], last[at : at + size]
        if a == b and len(a) == size:
            i, at, size = i + size, at + size, min(size * 2, 8192)
            continue
        lo, hi = 0, min(len(a), len(b))  # a[:lo] == b[:lo]; a difference, or an end, within [lo, hi]
        while hi - lo > 8:
            mid = (lo + hi) // 2
            if a[lo:mid] == b[lo:mid]:
                lo = mid
            else:
                hi = mid
        while lo < hi and a[lo] == b[lo]:
            lo += 1
        return i + lo, at + lo


def _place(new: Digests, i: int, last: Digests, at: int) -> tuple[int, int] | None:
    """The first of the next records (new[q], q < i + WINDOW) that is one of the next remembered ones
    (last[r], r < at + WINDOW): (q, r); None if there is none."""
    for q in range(i, min(i + WINDOW, len(new))):
        try:
            return q, last.index(new[q], at, at + WINDOW)
        except ValueError:
            continue
    return None
