"""Gated streaming: the model's text reaches a customer sentence by sentence, each only once it has
passed the truth contract (app/domain/validation.py), with its slots filled from the facts. The
first sentence that fails stops the stream: the caller aborts the engine request and serves the
deterministic answer instead, so the failed text is never shown, not even for a moment."""

from __future__ import annotations

from app.domain.facts import BillFacts
from app.domain.slots import fill
from app.domain.validation import OK, Contract, Verdict, check_sentence, sentence_ends
from app.prompts import SlotValues


class SentenceGate:
    def __init__(self, facts: BillFacts, locale: str, values: SlotValues) -> None:
        self.contract, self.locale, self.values = Contract.of(facts, values.slots), locale, values
        self._pending = ""  # text not yet released: the start of an unfinished sentence

    def feed(self, text: str) -> tuple[list[str], Verdict]:
        """The sentences `text` completes, filled, with their leading space; and the verdict on the
        first that failed (released sentences before it stand)."""
        self._pending += text
        released: list[str] = []
        start = 0
        for end in sentence_ends(self._pending):
            segment = self._pending[start:end]
            if segment.strip():
                verdict = check_sentence(segment.strip(), self.contract, self.locale)
                if not verdict.ok:
                    return released, verdict
                released.append(fill(segment, self.values))
            start = end
        self._pending = self._pending[start:]
        return released, OK

    def rest(self) -> str:
        """The last sentence, when it ended without a full stop (check the whole answer first)."""
        return fill(self._pending, self.values) if self._pending.strip() else ""
