"""Data the domain is handed by the edge: the domain reads no files, so app/locales.py says where
each locale's words come from (`provide`), and the domain asks for them when it needs them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Provided(Generic[T]):
    """One kind of handed-over data: `provide(source)` at the edge, `current()` in the domain."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._source: Callable[[], T] | None = None

    def provide(self, source: Callable[[], T]) -> None:
        self._source = source

    def __call__(self) -> T:
        if self._source is None:
            raise LookupError(f"no locale has handed over its {self.what}: import app.locales first")
        return self._source()
