"""Every knob of the service, read once from the environment and checked at start-up.

`Settings` nests one frozen group per concern (app/settings/groups.py: database, logs, engine,
admission, cache, batch, conversations, security, demo); each field names its variable beside it.
`Settings.from_env`, the only reader of the environment, is called once by each entry point (the
`bill-assistant` command, a test, a benchmark) and the result is handed down: the app keeps it in
`app.state.settings` and handlers receive it as the `settings` dependency. A value the service
cannot run with (a word outside its choices, which come from app/domain/vocabulary.py; a number out
of range; a boolean not 1/0, true/false, yes/no, on/off) is refused with a one-line `SettingsError`
(a ValueError), e.g. "ENGINE must be one of embedded, sglang, off (got 'gpu')"; an empty or unset
variable takes its default. The `bill-assistant` command prints that line on stderr ("Error: ...",
no traceback) and exits with status 1.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, get_type_hints

from app.settings.groups import (
    PROJECT_ROOT,
    AdmissionSettings,
    BatchSettings,
    CacheSettings,
    ConversationSettings,
    DatabaseSettings,
    DemoSettings,
    EngineSettings,
    LogSettings,
    SecuritySettings,
)
from app.settings.readers import SettingsError

__all__ = ["PROJECT_ROOT", "Settings", "SettingsError", "group_types", "variables"]


def _read(kind: type, e: Mapping[str, str], before: Mapping[str, Any]) -> Any:
    values: dict[str, Any] = {}
    for setting in fields(kind):
        spec = setting.metadata
        default = spec["default"](before) if callable(spec["default"]) else spec["default"]
        values[setting.name] = spec["read"](e, spec["env"], default)
    return kind(**values)


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    # Read in this order: a group's defaults may depend on the groups above it.
    database: DatabaseSettings
    logs: LogSettings
    engine: EngineSettings
    admission: AdmissionSettings
    cache: CacheSettings
    batch: BatchSettings
    conversations: ConversationSettings
    security: SecuritySettings
    demo: DemoSettings

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, defaults: Mapping[str, str] | None = None) -> Settings:
        """Settings from env (default: the process environment), over defaults for variables it lacks;
        a SettingsError (one line) on the first variable the service cannot run with."""
        e = {**(defaults or {}), **(os.environ if env is None else env)}
        groups: dict[str, Any] = {}
        for name, kind in group_types().items():
            groups[name] = _read(kind, e, groups)
        return cls(**groups)


def group_types() -> dict[str, type]:
    """Settings' groups in reading order, each with its class."""
    hints = get_type_hints(Settings)
    return {group.name: hints[group.name] for group in fields(Settings)}


def variables() -> set[str]:
    """Every environment variable the settings read."""
    return {f.metadata["env"] for kind in group_types().values() for f in fields(kind)}
