"""A conversation's thread: what its latest assistant turn hands the next question (a follow-up's
context, the claims already said), read back from and written into the turn's stored context."""

from __future__ import annotations

from app.answers.schemas import ExplanationResponse
from app.data.conversations import TurnContext
from app.domain.claims import Claim
from app.domain.conversation import Thread, statement_key
from app.domain.plan import same_claim
from app.domain.understanding import Context

NEW_THREAD = Thread(context=None, previous_question=None, unanswered=False)


def thread_of(stored: TurnContext | None) -> Thread:
    """The thread a question continues, from the latest assistant turn's context (None: none yet)."""
    if stored is None:
        return NEW_THREAD
    context = None
    if stored.intent is not None:
        context = Context(intent=stored.intent, subjects=tuple(stored.subjects), locale=stored.locale)
    return Thread(
        context=context,
        previous_question=stored.question,
        unanswered=stored.unanswered,
        said=tuple(stored.said),
        said_about=stored.said_about,
    )


def stored_context(answer: ExplanationResponse, question: str, thread: Thread) -> TurnContext:
    """The context the next follow-up continues: this turn's, or, after a polite refusal, the turn
    before's (a refusal is about nothing)."""
    refused = answer.intent == "out_of_scope" and answer.handover is None
    if refused:
        before = thread.context
        intent, subjects = (before.intent, list(before.subjects)) if before else (None, [])
    else:  # a follow-up goes on from the last part of a multi-part question ("…, and why is it higher?")
        intent, subjects = (answer.intents or [answer.intent])[-1], answer.subjects or []
    # What was said about this statement, so that a follow-up adds to it (app/domain/answer_policy.py).
    about = statement_key(answer.account_ref, answer.statement.period_end)
    said: list[Claim] = [c.claim for c in answer.claims or []]
    if thread.said_about == about:
        said = [*thread.said, *(c for c in said if not any(same_claim(c, s) for s in thread.said))]
    return TurnContext(
        intent=intent,
        subjects=list(subjects),
        locale=answer.locale,
        question=question,
        unanswered=refused,
        said=said,  # type: ignore[arg-type]  # every Claim is one of AnyClaim's
        said_about=about,
    )
