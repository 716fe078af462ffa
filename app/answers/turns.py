"""A question's turn: the records and facts it is answered from, what it was taken to be about
(app/domain/understanding.py: a follow-up continues the turn before), the language it is answered in,
and what a conversation's turn calls for besides an answer (app/domain/conversation.py)."""

from __future__ import annotations

import dataclasses
from datetime import date

from app import locales
from app.answers.messages import Ask, Turn
from app.data.driver_pool import DriverPool
from app.data.history import load_history
from app.data.knowledge_search import search
from app.domain.claims import Claim
from app.domain.conversation import Step, next_step, statement_key, statement_lines
from app.domain.facts import BillFacts, compute_facts
from app.domain.intents import mentioned
from app.domain.knowledge import Passage, Quotes, read_with_library, reason_tags, reasons
from app.domain.plan import fee_items
from app.domain.reasons import Rule
from app.domain.records import AccountHistory
from app.domain.understanding import Reading, understand
from app.domain.vocabulary import Locale
from app.errors import NotFound
from app.prompts import render_clarify, render_fallbacks, render_handover, render_took


async def read_turn(pool: DriverPool, ask: Ask, level: int) -> Turn:
    """The question with the facts it is answered from, and what it was taken to be about."""
    request, stopwatch = ask.request, ask.stopwatch
    context = ask.thread.context if ask.thread else None
    as_of = request.as_of or ask.today
    # The lines a follow-up's subject names are read like those the question names.
    search = " ".join((request.question, *context.subjects)) if context else request.question
    history = await _history(pool, ask, request.statement_period_end, as_of, search)
    with stopwatch.stage("facts"):
        facts = compute_facts(history, as_of)
        reading = understand(request.question, statement_lines(facts), context)
    # "What about last month?" is about the statement before; a subject found by a nickname or an
    # amount has lines the first read did not look for.
    period_end = request.statement_period_end
    if reading.previous_period and facts.previous is not None:
        period_end = facts.previous.period_end
    unread = [s for s in reading.subjects if s.lower() not in search.lower()]
    if period_end != request.statement_period_end or unread:
        search = " ".join((search, *unread))
        history = await _history(pool, ask, period_end, as_of, search)
        with stopwatch.stage("facts"):
            facts = compute_facts(history, as_of)
    locale = _locale(ask, reading, history.customer_locale)
    reading, quotes = await _library(pool, ask, facts, reading, locale)
    return Turn(
        ask=ask, level=level, history=history, facts=facts, reading=reading, locale=locale, as_of=as_of, quotes=quotes
    )


async def _library(
    pool: DriverPool, ask: Ask, facts: BillFacts, reading: Reading, locale: Locale
) -> tuple[Reading, Quotes]:
    """What the bank's help content says to the question: the passages that fit it (a question they
    answer is a policy question), and why the statement's fees and interest were charged."""
    if reading.handover:
        return reading, Quotes()
    question = ask.request.question
    with ask.stopwatch.stage("library"):
        async with pool.connection() as conn:
            found = await search(conn, ask.principal.tenant_id, locale, question, reason_tags(facts))
        why, fitting = reasons(facts, found.tagged), found.fitting()
        reading = read_with_library(reading, question, fitting)
    if reading.intent == "fees_interest" and "policy" in reading.intents:
        # A policy part after the fees: not an article their reasons quote already, or no part at all.
        fitting = [p for p in fitting if p.article not in {r.article for r in why}]
        if not fitting:
            reading = dataclasses.replace(reading, intents=tuple(i for i in reading.intents if i != "policy"))
    passages = tuple(fitting) if "policy" in reading.all_intents else ()
    return reading, Quotes(passages=passages, reasons=why)


async def _history(pool: DriverPool, ask: Ask, period_end: date | None, as_of: date, search: str) -> AccountHistory:
    """The account's records up to the statement ending `period_end` (the latest by default)."""
    account_ref, tenant = ask.request.account_ref, ask.principal.tenant_id
    with ask.stopwatch.stage("db"):
        async with pool.connection() as conn:
            history = await load_history(conn, tenant, account_ref, period_end, as_of, search)
    # Another customer's account is exactly as unknown as a missing one.
    if history is None or (ask.customer_ref is not None and history.customer_ref != ask.customer_ref):
        raise NotFound(f"account {account_ref!r} not found")
    if not history.statements or (period_end and history.statements[-1].period_end != period_end):
        which = f"ending on {period_end}" if period_end else "yet"
        raise NotFound(f"account {account_ref!r} has no statement {which}")
    return history


def step_of(turn: Turn) -> Step | None:
    """A conversation's turn that is not an answer: asked back, or handed to an agent."""
    return next_step(turn.reading, turn.ask.thread) if turn.ask.thread else None


def said_before(turn: Turn) -> tuple[Claim, ...]:
    """What the conversation already said about this turn's statement: not said again unless asked."""
    thread = turn.ask.thread
    if thread is None or thread.said_about != statement_key(turn.facts.account_ref, turn.facts.statement.period_end):
        return ()
    return thread.said


def took_of(turn: Turn) -> str:
    """What a follow-up was taken to be about, said first ("About City Gym: "); empty otherwise."""
    if not turn.reading.followup or step_of(turn) is not None:
        return ""
    return render_took(turn.intent, turn.reading.subjects, turn.locale)


def asks_model(turn: Turn) -> bool:
    """A polite refusal, a clarifying question and a handover notice need no model."""
    return turn.intent != "out_of_scope" and step_of(turn) is None


def unasked_rule(turn: Turn, step: Step | None) -> Rule:
    if step is not None:
        return "clarify" if step == "clarify" else "handover"
    return "out_of_scope" if turn.intent == "out_of_scope" else "engine_off"


def _locale(ask: Ask, reading: Reading, customer_locale: Locale) -> Locale:
    """The question's own language for the people who write to us (widget, console), the customer's
    when it does not say; a downstream system's explicit locale stands."""
    if ask.channel in ("api", "batch") and ask.request.locale:
        return ask.request.locale
    # Said the way the page or the customer says that language ("en" on an "en-XA" page is "en-XA").
    return locales.closest(ask.request.locale or customer_locale, reading.language) or customer_locale


def deterministic_text(turn: Turn) -> str:
    """The answer when the model is not asked or fails: from the facts and the bank's passages (or a
    clarifying question, a handover)."""
    with turn.ask.stopwatch.stage("explain"):
        step, reading, policy = step_of(turn), turn.reading, turn.ask.principal.policy
        if step == "clarify":
            return render_clarify(reading.choices, turn.locale)
        if step is not None:
            return render_handover(step, turn.locale, policy=policy)
        focus = reading.subjects or mentioned(turn.ask.request.question, turn.facts.labels)
        chat = turn.ask.channel == "widget"
        return render_fallbacks(
            reading.all_intents, turn.facts, turn.locale, policy=policy, focus=focus, quotes=turn.quotes, chat=chat
        )


def deterministic_quotes(turn: Turn) -> list[Passage]:
    """The bank's passages the deterministic answer quotes (app/prompts.py `render_fallbacks`): a policy
    question's best, and the reasons for the statement's fees; none for a notice or a question back."""
    if step_of(turn) is not None:
        return []
    intents = turn.reading.all_intents
    best = list(turn.quotes.passages[:1]) if "policy" in intents else []
    charged = "fees_interest" in intents and fee_items(turn.facts)
    return best + (list(turn.quotes.reasons) if charged else [])
