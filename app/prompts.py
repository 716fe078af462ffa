"""Renders the Jinja templates in prompts/: the deterministic explanation for now."""

from __future__ import annotations

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from app.domain import formatting
from app.domain.facts import BillFacts
from app.domain.money import ZERO
from app.settings import PROJECT_ROOT

PROMPTS_DIR = PROJECT_ROOT / "prompts"
LOCALES = ("en", "zh-CN")
# Templates write one sentence per line; English sentences are joined by a space, Chinese by nothing.
_JOINERS = {"en": " ", "zh-CN": ""}
# The explanation names the largest drivers; the response body lists all of them.
TOP_DRIVERS = 3

_env = Environment(
    loader=FileSystemLoader(PROMPTS_DIR),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    autoescape=False,  # plain text; HTML callers escape it when they render it
    auto_reload=False,  # templates are read once per process, never stat()ed on the hot path
)


def load_templates() -> None:
    """Compile every template now, so that no request pays for it."""
    for name in _env.list_templates(extensions=["j2"]):
        _env.get_template(name)


def render_fallback(facts: BillFacts, locale: str) -> str:
    """The deterministic explanation of a bill change in the customer's language."""
    if locale not in LOCALES:
        raise ValueError(f"unsupported locale {locale!r}")
    top, rest = facts.drivers[:TOP_DRIVERS], facts.drivers[TOP_DRIVERS:]
    text = _env.get_template(f"fallback/bill_change.{locale}.j2").render(
        facts=facts,
        top=top,
        rest=len(rest),
        rest_amount=sum((d.amount for d in rest), ZERO),
        money=lambda amount: formatting.money(amount, facts.currency, locale),
        signed_money=lambda amount: formatting.money(amount, facts.currency, locale, sign=True),
        day=lambda value: formatting.day(value, locale),
    )
    return _JOINERS[locale].join(line.strip() for line in text.splitlines() if line.strip())
