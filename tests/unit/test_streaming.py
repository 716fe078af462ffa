"""The answer's text while the model streams `{"answer": "..."}`: whatever the text, however the JSON is
laid out and wherever the chunks are cut, the decoder emits exactly the text, and never a character
that a later chunk would take back."""

from __future__ import annotations

import json
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.answers.streaming import AnswerTextDecoder

# Characters JSON escapes or that are easy to get wrong: quotes, backslashes, control characters (short
# and \u00XX escapes), a character JSON need not escape but may, CJK, and astral characters (emoji, a
# skin-tone modifier, a musical symbol) that ensure_ascii writes as a surrogate pair of \u escapes.
TRICKY = ['"', "\\", "/", "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f", "\u2028", "中", "文", "é"]
TRICKY += ["😀", "👍", "\U0001f3fd", "𝄞"]
# Text is what UTF-8 can carry, as in st.text(): no lone surrogates (an answer holding one is not valid
# JSON for the strict parse at the end, msgspec's, whatever the decoder showed while streaming).
texts = st.text(alphabet=st.one_of(st.characters(codec="utf-8"), st.sampled_from(TRICKY)))


@st.composite
def encodings(draw: st.DrawFn, text: str) -> str:
    """`{"answer": text}` as a model might write it: ASCII-only or not, compact, spaced or indented."""
    ensure_ascii = draw(st.booleans())
    key_separator = draw(st.sampled_from([": ", ":", " : ", " :"]))
    indent = draw(st.sampled_from([None, 2]))
    leading = draw(st.sampled_from(["", " ", "\n"]))
    return leading + json.dumps(
        {"answer": text}, ensure_ascii=ensure_ascii, indent=indent, separators=(",", key_separator)
    )


def chunks(encoded: str, cuts: list[int]) -> list[str]:
    bounds = [0, *cuts, len(encoded)]
    return [encoded[start:end] for start, end in pairwise(bounds)]


def decode(parts: list[str], text: str) -> str:
    """Feed the chunks one by one; after each, what was emitted so far must begin the text."""
    decoder, out = AnswerTextDecoder(), ""
    for part in parts:
        out += decoder.feed(part)
        assert text.startswith(out), (out, text, parts)
    assert decoder.closed
    assert decoder.feed('"} more') == ""  # nothing after the string counts
    return out


@settings(max_examples=500, deadline=None)
@given(text=texts, data=st.data())
def test_any_text_any_layout_any_chunking_decodes_exactly(text: str, data: st.DataObject) -> None:
    encoded = data.draw(encodings(text), label="encoded")
    cuts = data.draw(st.lists(st.integers(0, len(encoded)), unique=True).map(sorted), label="cuts")
    assert decode(chunks(encoded, cuts), text) == text


@pytest.mark.parametrize("ensure_ascii", [True, False])
@pytest.mark.parametrize("text", ['a😀b "q" \\ \n\t\x01 中文 \u2028 👍🏽', "😀", "", '\\"'])
def test_every_single_cut_and_one_character_at_a_time(text: str, ensure_ascii: bool) -> None:
    encoded = json.dumps({"answer": text}, ensure_ascii=ensure_ascii)
    for cut in range(len(encoded) + 1):  # two chunks, cut everywhere: inside the key, inside every escape
        assert decode(chunks(encoded, [cut]), text) == text, cut
    assert decode(list(encoded), text) == text
