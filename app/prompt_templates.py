"""Where Jinja finds the templates of app/prompts.py: prompts/ for the service's own, the folder of
locales in use for a locale's (app/locales.py; the tests point it at their pseudo-locale). Apart from
app/locales.py, so that a command that reads no template (a nightly `import`) starts without Jinja."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from jinja2 import BaseLoader, Environment, FileSystemLoader, StrictUndefined

from app import locales


class TemplateLoader(BaseLoader):
    """Templates from `own` (prompts/); a locale's (`locales/<locale>/…`) from the folder of locales
    in use, which the tests point at their generated pseudo-locale."""

    def __init__(self, own: Path) -> None:
        self.own = FileSystemLoader(own)

    def get_source(self, environment: Environment, template: str) -> tuple[str, str | None, Callable[[], bool]]:
        if template.startswith("locales/"):
            return FileSystemLoader(locales.root()).get_source(environment, template.removeprefix("locales/"))
        return self.own.get_source(environment, template)

    def list_templates(self) -> list[str]:
        own = [name for name in self.own.list_templates() if not name.startswith("locales/")]
        return sorted([*own, *(f"locales/{name}" for name in FileSystemLoader(locales.root()).list_templates())])


def environment(own: Path) -> Environment:
    """The prompts' environment: templates from `own` and the locales in use."""
    return Environment(
        loader=TemplateLoader(own),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,  # plain text; HTML callers escape it when they render it
        auto_reload=False,  # templates are read once per process, never stat()ed on the hot path
    )
