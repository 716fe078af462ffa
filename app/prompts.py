"""Renders the Jinja templates in prompts/: model prompts (static part first) and the deterministic answers.

A model prompt is: what to plan -> tenant policy -> output format and examples (all in the system
message, identical for every customer of a tenant) -> FACTS -> the question. So
the engine's prefix cache serves everything before FACTS. The prompt version is a hash of every
template source: a changed template is a new version, in every response and audit row.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from typing import Any

import msgspec

from app import locales
from app.domain.claims import sign_word
from app.domain.facts import BillFacts, Driver, Entry
from app.domain.knowledge import NO_QUOTES, Passage, Quotes
from app.domain.policy import TenantPolicy
from app.domain.slots import MAX_DRIVERS, items
from app.domain.vocabulary import ChatTemplate, Intent, Locale, PromptLayout
from app.prompt_templates import environment
from app.settings import PROJECT_ROOT

PROMPTS_DIR = PROJECT_ROOT / "prompts"
FACTS_MARKER = "FACTS\n"
# Chat templates of served model families, and the strings that end a turn in each.
CHAT_STOPS: dict[ChatTemplate, list[str]] = {"chatml": ["<|im_end|>"], "gemma": ["<end_of_turn>"]}
TOP_DRIVERS = 3  # the deterministic answer names the largest drivers; the response lists all
MAX_LABEL = 60  # merchant names and descriptions are untrusted text: short, one line


_env = environment(PROMPTS_DIR)
locales.on_change(lambda: _env.cache.clear() if _env.cache is not None else None)


def template_version(root: Any = PROMPTS_DIR) -> str:
    """A short hash of every template's name and bytes, and of each locale's locale.json (how its
    answers write amounts and dates), lexicon.json (how a question is understood, so which answer it
    gets) and validation.json (which sentences are said): app/locales.py `version_files`."""
    digest = hashlib.sha256()
    own = [path for path in root.rglob("*.j2") if "locales" not in path.relative_to(root).parts[:1]]
    for path in sorted(own):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for path in locales.version_files():
        digest.update(path.relative_to(locales.root()).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


PROMPT_VERSION = template_version()


@functools.lru_cache(maxsize=256)
def answer_version(policy: TenantPolicy) -> str:
    """The version an answer is made under: the templates', and a tenant's own answer policy where it
    has one (so an answer made under another policy is never served from the cache)."""
    if not policy.answers:
        return PROMPT_VERSION
    rules = msgspec.json.encode(sorted(policy.answers.items())).decode()
    return hashlib.sha256(f"{PROMPT_VERSION}\0{rules}".encode()).hexdigest()[:12]


class RenderedPrompt(msgspec.Struct, frozen=True, kw_only=True):
    text: str
    static_prefix: str  # everything before FACTS: the same for every customer of the tenant
    stop: list[str]
    version: str


def load_templates() -> None:
    """Compile every template now, so that no request pays for it."""
    for name in _env.list_templates(extensions=["j2"]):
        _env.get_template(name)


def _formatters(currency: str, locale: str) -> dict[str, Callable[..., str]]:
    return {
        "money": lambda amount: locales.money(amount, currency, locale),
        "signed_money": lambda amount: locales.money(amount, currency, locale, sign=True),
        "day": lambda value: locales.day(value, locale),
    }


def _label(text: str) -> str:
    """Third-party text (a merchant's name, a fee's description) as data: one short line, no delimiters."""
    return " ".join(text.split())[:MAX_LABEL].replace("<<<", "").replace(">>>", "").replace("“", "").replace("”", "")


def _delimited(text: str) -> str:
    """The customer's text as data between the prompt's delimiters."""
    return text.replace("<<<", "").replace(">>>", "").strip()


def _passage(passage: Passage) -> Passage:
    """The bank's passage in the prompt: its text whole, on one line, without the prompt's delimiters."""
    return msgspec.structs.replace(
        passage, title=_label(passage.title), text=_delimited(" ".join(passage.text.split())).replace("“", '"')
    )


def clean_entry(entry: Entry) -> Entry:
    return msgspec.structs.replace(entry, label=_label(entry.label))


def clean_driver(driver: Driver) -> Driver:
    return msgspec.structs.replace(driver, label=_label(driver.label)) if driver.label else driver


@functools.lru_cache(maxsize=1024)
def _system(policy: TenantPolicy) -> str:
    """The system message: what the model plans, the tenant's policy, the output format and examples.
    It depends on nothing else, so each tenant renders it once per process (and one prompt serves
    every locale: the model plans claims, the service says them in the customer's language)."""
    return _env.get_template("answer/system.j2").render(policy=policy).strip()


def _start(intent: Intent, facts: BillFacts, focus: Iterable[int]) -> str:
    """What FACTS tell the model to say first: the claim that answers the intent (app/domain/plan.py)."""
    if intent == "bill_change":
        return "change, then a driver" if facts.drivers and facts.difference else "change"
    if intent == "charge":
        named = [f"transaction {n}" for n in sorted(focus)]
        return " or ".join(named) if named else "transaction or no_answer"
    if intent == "policy":
        return "passage or no_answer"
    return "fees_interest" if intent == "fees_interest" else "payment_status"


def render_prompt(
    *,
    policy: TenantPolicy,
    intent: Intent,
    facts: BillFacts,
    question: str,
    chat_template: ChatTemplate,
    focus: Iterable[int] = (),
    layout: PromptLayout = "static",
    previous_question: str | None = None,
    passages: Sequence[Passage] = (),
) -> RenderedPrompt:
    """The plan prompt. `focus`: the numbers of the transactions the question names;
    `previous_question`: a conversation's question before this one (after FACTS, like the question);
    `passages`: the bank's passages a policy question may be answered with (PASSAGES)."""
    shown = [clean_entry(e) for e in items(facts)]
    fees = [i for i, e in enumerate(shown, start=1) if e.kind in ("fee", "interest")]
    user = (
        _env.get_template("answer/user.j2")
        .render(
            facts=facts,
            intent=intent,
            drivers=list(enumerate((clean_driver(d) for d in facts.drivers[:MAX_DRIVERS]), start=1)),
            # Single transactions only where the question is about them: a shorter prompt prefills faster.
            items=list(enumerate(shown, start=1)) if intent in ("charge", "fees_interest") else [],
            fees=", ".join(f"transaction {n}" for n in fees) or "none",
            start=_start(intent, facts, focus),
            passages=[(i, _passage(p)) for i, p in enumerate(passages, start=1)],
            question=_delimited(question),
            previous=_delimited(previous_question) if previous_question else None,
            direction=sign_word,
            **_formatters(facts.currency, locales.model()),  # the model plans in its locale; we say it in theirs
        )
        .strip()
    )
    if not user.startswith(FACTS_MARKER):
        raise ValueError("the user template must start with the FACTS block")
    system = _system(policy)
    if layout == "dynamic":  # FACTS and question first: nothing is shared, for measurements only
        system, user = f"{user}\n\n{system}", "Answer."
    text = _env.get_template(f"chat/{chat_template}.j2").render(system=system, user=user)
    return RenderedPrompt(
        text=text,
        static_prefix=text[: text.rindex(user)],  # the system prompt's examples have FACTS blocks too
        stop=CHAT_STOPS[chat_template],
        version=PROMPT_VERSION,
    )


def render_fallback(
    intent: Intent,
    facts: BillFacts,
    locale: str,
    *,
    policy: TenantPolicy,
    focus: Iterable[str] = (),
    quotes: Quotes = NO_QUOTES,
    chat: bool = False,
) -> str:
    """The deterministic answer for the intent, in the customer's language. `focus`: the labels of
    the charges the question names; `quotes`: the bank's passages it may quote (a policy question's
    best, the reasons for the fees); `chat`: the customer asks in the chat widget, where a person
    can be asked for "here in the chat" (never said to an API's, the console's or a batch's caller)."""
    locales.data(locale)  # a ValueError for a locale without a folder
    wanted = set(focus)
    charges = [e for e in facts.entries if e.kind != "payment"]
    entries = [clean_entry(e) for e in charges]
    text = _env.get_template(f"locales/{locale}/fallback/{intent}.j2").render(
        facts=facts,
        policy=policy,
        top=facts.drivers[:TOP_DRIVERS],
        rest=len(facts.drivers) > TOP_DRIVERS,
        entries=entries,
        focus=[clean for e, clean in zip(charges, entries, strict=True) if e.label in wanted],
        passage=quotes.passages[0] if quotes.passages else None,
        reasons=quotes.reasons,
        quote=claim_wordings(locale).quote,
        chat=chat,
        **_formatters(facts.currency, locale),
    )
    return locales.JOINERS[locale].join(line.strip() for line in text.splitlines() if line.strip())


def render_fallbacks(
    intents: Iterable[Intent],
    facts: BillFacts,
    locale: str,
    *,
    policy: TenantPolicy,
    focus: Iterable[str] = (),
    quotes: Quotes = NO_QUOTES,
    chat: bool = False,
) -> str:
    """The deterministic answer of each part of a question (its intents, in order), joined."""
    focus = list(focus)
    parts = (render_fallback(i, facts, locale, policy=policy, focus=focus, quotes=quotes, chat=chat) for i in intents)
    return locales.JOINERS[locale].join(parts)


@functools.lru_cache(maxsize=2)
def _intent_system() -> str:
    return _env.get_template("intent/system.j2").render().strip()


def render_intent_prompt(question: str, chat_template: ChatTemplate) -> str:
    """The intent choice's prompt: the static list of intents first, the question last."""
    user = f"<<<{_delimited(question)}>>>"
    return _env.get_template(f"chat/{chat_template}.j2").render(system=_intent_system(), user=user)


def _conversation(locale: str) -> Any:
    return _env.get_template(f"locales/{locale}/conversation.j2").module


def render_took(intent: Intent, subjects: Iterable[str], locale: Locale) -> str:
    """What a follow-up was taken to be about, said before its answer ("About “City Gym”: ")."""
    return str(_conversation(locale).took(intent, [_label(s) for s in subjects]))


def render_clarify(choices: Iterable[str], locale: Locale) -> str:
    """The question asked back when a question could mean several lines."""
    return str(_conversation(locale).clarify([_label(c) for c in choices]))


def render_handover(reason: str, locale: Locale, *, policy: TenantPolicy) -> str:
    """The notice that a person will answer the conversation from now on."""
    return str(_conversation(locale).handover(reason, policy.brand))


def render_notice(name: str, locale: Locale, /, **values: str | None) -> str:
    """A conversation's other notices: `joined` (an agent took it), `back` (handed back to the assistant),
    `not_saved` (a turn that could not be recorded)."""
    return str(getattr(_conversation(locale), name)(**values))


def claim_wordings(locale: str) -> Any:
    """The reviewed wordings of plan claims in this locale: prompts/locales/<locale>/claims.j2's macros."""
    return _env.get_template(f"locales/{locale}/claims.j2").module


def macros(locale: str) -> Any:
    """How a locale words a driver, a statement line and a payment status: prompts/locales/<locale>/macros.j2."""
    return _env.get_template(f"locales/{locale}/macros.j2").module


def phrases(drivers: Iterable[Driver], status: str, locale: str) -> tuple[list[str], str]:
    """The words the answers use for each driver and for a payment status, in the customer's language."""
    words = macros(locale)
    return [str(words.driver(d)) for d in drivers], str(words.status({"status": status}))


def change(amount: Decimal, currency: str, locale: str) -> str:
    """A change since the previous statement written as one ("64.38 EUR less than last month"), never
    as a signed amount, which reads as a refund."""
    direction = "up" if amount > 0 else "down" if amount < 0 else "same"
    return str(macros(locale).change(locales.money(abs(amount), currency, locale), direction))
