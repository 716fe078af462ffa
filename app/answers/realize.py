"""Says a plan's accepted claims to the customer, in reviewed wordings (prompts/locales/<locale>/claims.j2).

Each wording is written with slots and filled from the facts, so the text states the facts' values
exactly; the truth contract's sentence check (app/domain/validation.py) still runs over every
realized sentence, as a second line behind the plan check (app/domain/plan.py)."""

from __future__ import annotations

from app.answers.schemas import SaidClaim
from app.domain.claims import Claim, Transaction, kind_of
from app.domain.facts import BillFacts
from app.domain.plan import fee_items
from app.domain.reasons import Reason
from app.domain.slots import SLOT, Slot, fill, items
from app.domain.validation import Contract, check_sentence
from app.domain.vocabulary import Locale
from app.prompts import JOINERS, SlotValues, claim_wordings


class Realizer:
    def __init__(self, facts: BillFacts, locale: Locale) -> None:
        self.facts, self.locale = facts, locale
        self.values = SlotValues(facts, locale)
        self.contract = Contract.of(facts, self.values.slots)
        self._items = items(facts)
        self._fees = fee_items(facts)
        self._interest = any(self._items[n - 1].kind == "interest" for n in self._fees)
        self._wordings = claim_wordings(locale)

    def slotted(self, claim: Claim, prev: Claim | None) -> list[str]:
        """The claim's sentences with their slots unfilled (`prev`: the claim said before it)."""
        item = self._items[claim.n - 1] if isinstance(claim, Transaction) else None
        text = self._wordings.say(
            kind_of(claim), claim, self.facts, kind_of(prev) if prev else None, item, self._fees, self._interest
        )
        return [line.strip() for line in str(text).splitlines() if line.strip()]

    def say(self, claim: Claim, prev: Claim | None) -> tuple[str, Reason | None]:
        """The claim as the customer reads it (joined to what came before), or why it may not be said."""
        said, reason = self.resolve(claim, prev)
        return ("", reason) if said is None else (self.joined(said, after=prev is not None), None)

    def joined(self, said: SaidClaim, *, after: bool) -> str:
        """A said claim's text as it follows what came before (`after`), or begins the answer."""
        return (JOINERS[self.locale] + said.text) if after else said.text

    def resolve(self, claim: Claim, prev: Claim | None) -> tuple[SaidClaim | None, Reason | None]:
        """The claim said: its sentences and the facts they state by name, for a system that uses the
        facts without reading the text (a CRM note); or why it may not be said."""
        sentences = self.slotted(claim, prev)
        for sentence in sentences:
            verdict = check_sentence(sentence, self.contract, self.locale)
            if verdict.reason is not None:
                return None, verdict.reason
        names = dict.fromkeys(m.group(1) for sentence in sentences for m in SLOT.finditer(sentence))
        text = JOINERS[self.locale].join(fill(sentence, self.values) for sentence in sentences)
        values = {name: self._value(self.values.slots[name]) for name in names}
        return SaidClaim(claim=claim, values=values, text=text), None  # type: ignore[arg-type]

    def _value(self, slot: Slot) -> str:
        """A slot's fact as data: amounts as decimal strings (as they moved the balance; a payment as
        paid), dates in ISO form, the status, labels as on the statement."""
        if slot.kind == "money" and slot.money is not None:
            return str(-slot.money if slot.role == "payment" else slot.money)
        if slot.day is not None:
            return slot.day.isoformat()
        if slot.kind == "status":
            return self.facts.payment.status
        if slot.role == "driver":
            driver = self.facts.drivers[slot.index - 1]
            return driver.label or driver.kind
        return self._items[slot.index - 1].label
