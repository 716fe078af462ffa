"""How one environment variable is read: its reader, its default, and the one-line error for a value
the service cannot run with (a word outside its choices, a number out of range, a boolean not 1/0,
true/false, yes/no, on/off); an empty or unset variable takes its default."""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any, TypeVar, cast

# The words a boolean variable accepts, in the order the error message lists them.
_FLAGS = {"1": True, "0": False, "true": True, "false": False, "yes": True, "no": False, "on": True, "off": False}

C = TypeVar("C", bound=str)
Env = Mapping[str, str]
Reader = Callable[[Env, str, Any], Any]  # (environment, variable, default) -> value
# A value, or a function of the groups read before this one (Settings reads its groups in order).
Default = Any


class SettingsError(ValueError):
    """A variable the service cannot run with; the message is one line naming it and what it accepts."""


def var(name: str, default: Default, read: Reader) -> Any:
    """A setting: its environment variable, its default and how it is read, beside its field."""
    return field(metadata={"env": name, "default": default, "read": read})


def choice(e: Env, name: str, default: C, choices: Sequence[C], case: Callable[[str], str] = str.lower) -> C:
    value = case(e.get(name, "").strip())
    if not value:
        return default
    if value in choices:
        return cast(C, value)
    raise SettingsError(f"{name} must be one of {', '.join(choices)} (got {e[name]!r})")


def _int(e: Env, name: str, default: int, minimum: int) -> int:
    value = e.get(name, "").strip()
    if not value:
        return default
    try:
        number = int(value)
    except ValueError:
        number = minimum - 1
    if number < minimum:
        raise SettingsError(f"{name} must be an integer >= {minimum} (got {e[name]!r})")
    return number


def _float(e: Env, name: str, default: float, zero: bool) -> float:
    """A finite number above 0 (at least 0 where zero is allowed)."""
    value = e.get(name, "").strip()
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number < 0 or (number == 0 and not zero):
        raise SettingsError(f"{name} must be a number {'>=' if zero else '>'} 0 (got {e[name]!r})")
    return number


def flag(e: Env, name: str, default: bool) -> bool:
    value = e.get(name, "").strip().lower()
    if not value:
        return default
    if value not in _FLAGS:
        raise SettingsError(f"{name} must be one of {', '.join(_FLAGS)} (got {e[name]!r})")
    return _FLAGS[value]


def text(e: Env, name: str, default: str | None) -> str | None:
    return e.get(name, "").strip() or default


def path(e: Env, name: str, default: Path) -> Path:
    return Path(e.get(name, "").strip() or default)


def integer(minimum: int) -> Reader:
    return lambda e, name, default: _int(e, name, default, minimum)


def number(zero: bool = False) -> Reader:
    return lambda e, name, default: _float(e, name, default, zero)


def one_of(choices: Sequence[str], case: Callable[[str], str] = str.lower) -> Reader:
    return lambda e, name, default: choice(e, name, default, choices, case)


def origins(e: Env, name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(o.strip().rstrip("/") for o in e.get(name, "").split(",") if o.strip()) or default


def networks(e: Env, name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    listed = tuple(a.strip() for a in e.get(name, "").split(",") if a.strip()) or default
    try:
        return tuple(str(ipaddress.ip_network(a, strict=False)) for a in listed)
    except ValueError:
        raise SettingsError(f"{name} must list IP addresses or networks, never * (got {e[name]!r})") from None
