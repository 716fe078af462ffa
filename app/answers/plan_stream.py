"""Cuts a plan's JSON into its claims while the model is still writing it.

The engine is asked for `{"claims": [{...}, {...}]}` under a schema; each claim object is handed on
as soon as its closing brace arrives, so the service can check it and say it at once (streaming by
claim). The whole output is still parsed strictly once it has ended."""

from __future__ import annotations

CLAIM_DEPTH = 3  # the plan object, its claims array, a claim


class ClaimSplitter:
    def __init__(self) -> None:
        self._depth = 0
        self._string = False  # inside a JSON string: braces there are text
        self._escape = False
        self._claim: list[str] | None = None  # the claim being written

    def feed(self, chunk: str) -> list[str]:
        """The claim objects (their JSON text) that this chunk completes."""
        done = []
        for char in chunk:
            if self._claim is not None:
                self._claim.append(char)
            if self._string:
                if self._escape:
                    self._escape = False
                elif char == "\\":
                    self._escape = True
                elif char == '"':
                    self._string = False
            elif char == '"':
                self._string = True
            elif char in "{[":
                self._depth += 1
                if char == "{" and self._depth == CLAIM_DEPTH:
                    self._claim = [char]
            elif char in "}]":
                if char == "}" and self._depth == CLAIM_DEPTH and self._claim is not None:
                    done.append("".join(self._claim))
                    self._claim = None
                self._depth -= 1
        return done
