"""A question's turn recorded once its answer is audited: the customer's question and the answer
(with its facts, what it was taken to be about, and the languages both were in), and the handover it
asks for; in one transaction, the conversation's row with its first turn.

The answer has been streamed by then, so a turn that cannot be written is never a stream that just
ends: the write is tried again while the database comes back (RETRY_PAUSES_S), and if it still cannot
be, the customer is told (`NotSaved`), and the answer's audit row says so once the database answers
(`answer.turn.recorded: false`)."""

from __future__ import annotations

import asyncio
import uuid

import msgspec
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from app.answers.schemas import ExplanationResponse
from app.conversations.threads import stored_context
from app.conversations.values import NewTurn, NotSaved, TurnRecorded
from app.conversations.wakeups import Wakeups
from app.data import conversations, handovers, turns
from app.data.database import connection
from app.domain.vocabulary import ConversationStatus
from app.errors import DatabaseUnavailable
from app.metrics import HANDOVERS_BY
from app.prompts import render_notice

log = structlog.get_logger("bill_assistant.conversations")
# A turn's write is tried again after these pauses (a database that drops connections, a failover);
# then the customer is told, and its audit row is noted within NOTE_FOR_S, tried every NOTE_EVERY_S.
RETRY_PAUSES_S = (0.25, 0.5, 1.0)
NOTE_FOR_S, NOTE_EVERY_S = 600.0, 1.0
_NOTING: set[asyncio.Task[None]] = set()  # the notes still to write (a task must be held to run)


async def record_turn(
    db: AsyncEngine, wakeups: Wakeups, turn: NewTurn, answer: ExplanationResponse, facts: msgspec.Struct
) -> TurnRecorded | NotSaved:
    """Writes the turn (`facts`: what the customer was shown beside the answer), or says it was not saved."""
    for attempt, pause in enumerate((*RETRY_PAUSES_S, None)):
        try:
            written = await _write(db, turn, answer, facts, retry=attempt > 0)
        except DatabaseUnavailable:
            if pause is None:
                break
            await asyncio.sleep(pause)
        except Exception:
            log.exception("turn not recorded", conversation_id=str(turn.conversation_id))
            break
        else:
            wakeups.wake(turn.conversation_id)
            return written
    log.error("turn not recorded", conversation_id=str(turn.conversation_id), answer_id=answer.answer_id)
    task = asyncio.get_running_loop().create_task(_note(db, turn, uuid.UUID(answer.answer_id)))
    _NOTING.add(task)
    task.add_done_callback(_NOTING.discard)
    return NotSaved(message=render_notice("not_saved", answer.locale))


async def _write(
    db: AsyncEngine, turn: NewTurn, answer: ExplanationResponse, facts: msgspec.Struct, *, retry: bool
) -> TurnRecorded:
    tenant, cid, answer_id = turn.principal.tenant_id, turn.conversation_id, uuid.UUID(answer.answer_id)
    status: ConversationStatus = "bot"
    async with connection(db, transaction=True) as conn:
        # A try whose commit was made but not acknowledged: the turn is there already.
        if retry and (done := await turns.recorded(conn, tenant, cid, answer_id, turn.seen)) is not None:
            return TurnRecorded(customer_seq=done.customer_seq, assistant_seq=done.assistant_seq, status=done.status)
        if turn.new:
            await conversations.start(conn, tenant, cid, turn.customer_ref, turn.locale)
        asked = await conversations.append(
            conn, tenant, cid, "customer", turn.question, locale=turn.locale, account_ref=turn.account_ref
        )
        answered = await conversations.append(
            conn,
            tenant,
            cid,
            "assistant",
            answer.explanation,
            locale=answer.locale,
            account_ref=answer.account_ref,
            answer_id=answer_id,
            audit_id=turn.audit_id,
            facts=facts,
            context=stored_context(answer, turn.question, turn.thread),
            choices=answer.choices,
        )
        if answer.handover is not None and await handovers.hand_over(conn, tenant, cid, answer.handover):
            status = "waiting"
            HANDOVERS_BY(turn.principal.tenant_slug, answer.handover).inc()
    return TurnRecorded(customer_seq=asked, assistant_seq=answered, status=status)


async def _note(db: AsyncEngine, turn: NewTurn, answer_id: uuid.UUID) -> None:
    """The audit row says the turn was not recorded, as soon as the database answers again."""
    loop = asyncio.get_running_loop()
    until, cid, tenant = loop.time() + NOTE_FOR_S, turn.conversation_id, turn.principal.tenant_id
    while True:
        try:
            async with connection(db, transaction=True) as conn:
                noted = await turns.note_unrecorded(conn, tenant, turn.audit_id, cid, answer_id, turn.seen)
        except DatabaseUnavailable:
            if loop.time() > until:
                log.error("turn not recorded, and not noted in its audit row", audit_id=str(turn.audit_id))
                return
            await asyncio.sleep(NOTE_EVERY_S)
        else:
            log.warning(
                "turn not recorded: noted in its audit row" if noted else "turn recorded after all",
                audit_id=str(turn.audit_id),
                conversation_id=str(cid),
            )
            return
