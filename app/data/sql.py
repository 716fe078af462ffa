"""Statements for asyncpg written with named parameters (`:tenant_id`), as SQLAlchemy's `text()` takes
them, and bound by name: a struct whose fields are reordered, or a mapping built in any order, can
never shift a value into another column. The `$n` text asyncpg needs is made once, when the statement
is defined; binding is one C-level getter call."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from operator import attrgetter, itemgetter
from typing import Any

import msgspec

# Quoted strings, quoted names and comments are passed over; `::type` casts are not parameters.
_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|(?<![:\w]):([A-Za-z_]\w*)")


class MissingParameter(LookupError):
    """A statement was bound without a value for one of its parameters."""


def _getter(make: Callable[..., Callable[[Any], Any]], names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    if not names:
        return lambda _: ()
    if len(names) == 1:  # attrgetter/itemgetter of one name return the value, not a 1-tuple
        one = make(names[0])
        return lambda values: (one(values),)
    return make(*names)


class Statement:
    """`sql`: the statement in asyncpg's `$n` form; `args(values)`: its arguments in that order, each
    taken by name from a mapping or a msgspec struct (extra names are ignored)."""

    __slots__ = ("_from_mapping", "_from_struct", "names", "sql")

    def __init__(self, named: str) -> None:
        names: list[str] = []

        def number(match: re.Match[str]) -> str:
            name = match[1]
            if name is None:
                return match[0]
            if name not in names:
                names.append(name)
            return f"${names.index(name) + 1}"

        self.sql = _TOKEN.sub(number, named)
        self.names = tuple(names)
        self._from_mapping = _getter(itemgetter, self.names)
        self._from_struct = _getter(attrgetter, self.names)

    def args(self, values: Mapping[str, Any] | msgspec.Struct) -> tuple[Any, ...]:
        struct = isinstance(values, msgspec.Struct)
        try:
            return self._from_struct(values) if struct else self._from_mapping(values)
        except (KeyError, AttributeError):
            given = values.__struct_fields__ if isinstance(values, msgspec.Struct) else tuple(values)
            missing = [name for name in self.names if name not in given]
            named = ", ".join(f":{name}" for name in missing)
            raise MissingParameter(f"no value for {named} in {type(values).__name__}") from None
