"""The answer's text while the model is still writing it.

The engine is asked for `{"answer": "..."}` (schema-constrained: bounded, no stray keys), so the
chat widget streams the same prompt, the same prefix cache and the same validated answer as the
JSON API. This decoder turns the raw JSON chunks into the string's text as soon as each character
is complete; the whole output is still parsed strictly once it has ended."""

from __future__ import annotations

import json
import re

_OPENING = re.compile(r'\s*\{\s*"answer"\s*:\s*"')
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class AnswerTextDecoder:
    def __init__(self) -> None:
        self._head = ""  # output before the string opens
        self._pending = ""  # an escape sequence cut in two by a chunk boundary
        self._open = False
        self.closed = False  # the string has ended (or the output is not what was asked for)

    def feed(self, chunk: str) -> str:
        """The text completed by this chunk ("" while inside an escape or before the string)."""
        if self.closed:
            return ""
        if not self._open:
            self._head += chunk
            match = _OPENING.match(self._head)
            if match is None:
                return ""
            self._open = True
            chunk, self._head = self._head[match.end() :], ""
        text, out, i = self._pending + chunk, [], 0
        self._pending = ""
        while i < len(text):
            char = text[i]
            if char == '"':
                self.closed = True
                break
            if char != "\\":
                out.append(char)
                i += 1
                continue
            size = _escape_size(text, i)
            if i + size > len(text):
                self._pending = text[i:]
                break
            try:
                out.append(_ESCAPES[text[i + 1]] if size == 2 else json.loads(f'"{text[i : i + size]}"'))
            except (KeyError, ValueError):
                self.closed = True  # not valid JSON: the strict parse at the end will say so
                break
            i += size
        return "".join(out)


def _escape_size(text: str, i: int) -> int:
    """Length of the escape sequence at text[i] (a backslash), as far as can be told yet."""
    if text[i + 1 : i + 2] != "u":
        return 2
    high = text[i + 2 : i + 4].lower()
    # A UTF-16 high surrogate (an emoji, say) is a character only with the escape after it.
    return 12 if len(high) == 2 and high[0] == "d" and high[1] in "89ab" else 6
