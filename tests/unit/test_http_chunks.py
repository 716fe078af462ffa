"""The engine client's chunked-body decoder (app/inference/http.py `_take_chunks`)."""

from __future__ import annotations

import pytest

from app.inference.http import _take_chunks

BODY = b"6\r\nhello \r\n8;ext=1\r\nchunked \r\n5\r\nworld\r\n0\r\nX-Trailer: yes\r\n\r\n"


def _feed(pieces: list[bytes]) -> tuple[bytes, bytes, bool]:
    out, buffered, ended = b"", b"", False
    for piece in pieces:
        assert not ended
        taken, buffered, ended = _take_chunks(buffered + piece)
        out += b"".join(taken)
    return out, buffered, ended


@pytest.mark.parametrize("cut", range(1, len(BODY)))
def test_a_body_cut_anywhere_decodes_to_the_same_bytes_and_ends_after_the_trailer(cut: int) -> None:
    out, left, ended = _feed([BODY[:cut], BODY[cut:]])
    assert (out, left, ended) == (b"hello chunked world", b"", True)


def test_a_burst_of_chunks_is_taken_at_once_and_bytes_after_the_end_are_left() -> None:
    taken, left, ended = _take_chunks(BODY + b"HTTP/1.1")
    assert taken == [b"hello ", b"chunked ", b"world"]
    assert (left, ended) == (b"HTTP/1.1", True)


def test_an_unfinished_body_has_not_ended() -> None:
    taken, left, ended = _take_chunks(b"6\r\nhello \r\n5\r\nwor")
    assert (taken, left, ended) == ([b"hello "], b"5\r\nwor", False)


@pytest.mark.parametrize(
    ("bad", "message"),
    [(b"6\r\nhello XX", "not followed by CRLF"), (b"zz\r\nhello\r\n", "base 16"), (b"-1\r\n\r\n", "chunk size -1")],
)
def test_broken_framing_is_refused(bad: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _take_chunks(bad)
