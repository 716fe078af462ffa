"""Says a plan's accepted claims to the customer, in reviewed wordings (prompts/locales/<locale>/claims.j2).

Each wording is written with slots and filled from the facts, so the text states the facts' values
exactly; the truth contract's sentence check (app/domain/validation.py) still runs over every
realized sentence, as a second line behind the plan check (app/domain/plan.py). The bank's own
passages are quoted verbatim around a reviewed wording that names their article: they are the bank's
reviewed text, not the model's, and are not checked against the facts."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from app import locales
from app.answers.schemas import SaidClaim, SourceOut
from app.domain.claims import Claim, FeesInterest, NoAnswer, PassageClaim, Transaction, kind_of
from app.domain.facts import BillFacts, Entry
from app.domain.knowledge import NO_QUOTES, Passage, Quotes
from app.domain.plan import fee_items
from app.domain.reasons import Reason
from app.domain.slots import SLOT, Slot, change_percent, fill, items, slots
from app.domain.validation import Contract, check_sentence
from app.domain.vocabulary import Intent, Locale
from app.locales import JOINERS
from app.prompts import claim_wordings, clean_driver, clean_entry, macros


class SlotValues(Mapping[str, str]):
    """What each slot of these facts says to the customer, written for their locale: amounts as
    positive figures (the words around them give the direction; a balance in credit is negative),
    dates, the status phrase, the drivers' and transactions' descriptions with third-party names
    quoted. Each value is written
    when it is first asked for: an answer names two or three of the forty-odd slots."""

    def __init__(self, facts: BillFacts, locale: Locale) -> None:
        self.facts, self.locale = facts, locale
        self.slots = slots(facts)
        self._written: dict[str, str] = {}
        self._items: list[Entry] | None = None  # the lines item slots name, read at the first one

    def __getitem__(self, name: str) -> str:
        value = self._written.get(name)
        if value is None:
            value = self._written[name] = self._write(self.slots[name])
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self.slots)

    def __len__(self) -> int:
        return len(self.slots)

    def _write(self, slot: Slot) -> str:
        facts, locale = self.facts, self.locale
        if slot.kind == "money" and slot.money is not None:
            # A balance in credit keeps its sign; every other amount is said with its direction.
            signed = slot.role in ("new_balance", "previous_balance")
            return locales.money(slot.money if signed else abs(slot.money), facts.currency, locale)
        if slot.kind == "date" and slot.day is not None:
            return locales.day(slot.day, locale)
        if slot.kind == "percent":
            return f"{change_percent(facts)}%"
        words = macros(locale)
        if slot.kind == "status":
            return str(words.status({"status": facts.payment.status}))
        if slot.role == "driver":
            return str(words.driver(clean_driver(facts.drivers[slot.index - 1])))
        if self._items is None:
            self._items = items(facts)
        return str(words.entry(clean_entry(self._items[slot.index - 1])))


class Realizer:
    def __init__(
        self,
        facts: BillFacts,
        locale: Locale,
        quotes: Quotes = NO_QUOTES,
        intent: Intent | None = None,
        *,
        chat: bool = False,
    ) -> None:
        """`chat`: the customer asks in the chat widget (its next step may say "here in the chat")."""
        self.facts, self.locale, self.quotes, self.intent, self.chat = facts, locale, quotes, intent, chat
        self.values = SlotValues(facts, locale)
        self.contract = Contract.of(facts, self.values.slots)
        self._items = items(facts)
        self._fees = fee_items(facts)
        self._wordings = claim_wordings(locale)
        self.han = locales.data(locale).han_share

    def slotted(self, claim: Claim, prev: Claim | None) -> list[str]:
        """The claim's sentences with their slots unfilled (`prev`: the claim said before it)."""
        item = self._items[claim.n - 1] if isinstance(claim, Transaction) else None
        if isinstance(claim, NoAnswer) and self.intent == "policy":
            text = self._wordings.not_found(claim.wording, chat=self.chat)
        else:
            text = self._wordings.say(
                kind_of(claim), claim, self.facts, kind_of(prev) if prev else None, item, self._fees, chat=self.chat
            )
        return [line.strip() for line in str(text).splitlines() if line.strip()]

    def say(self, claim: Claim, prev: Claim | None) -> tuple[str, Reason | None]:
        """The claim as the customer reads it (joined to what came before), or why it may not be said."""
        said, reason = self.resolve(claim, prev)
        return ("", reason) if said is None else (self.joined(said, after=prev is not None), None)

    def joined(self, said: SaidClaim, *, after: bool) -> str:
        """A said claim's text as it follows what came before (`after`), or begins the answer."""
        return (JOINERS[self.locale] + said.text) if after else said.text

    def quoted(self, claim: Claim) -> list[Passage]:
        """The bank's passages the claim quotes: the one it names, or the reasons for the fees it lists."""
        if isinstance(claim, PassageClaim):
            return [self.quotes.passages[claim.n - 1]]
        if isinstance(claim, FeesInterest) and self._fees:
            return list(self.quotes.reasons)
        return []

    def resolve(self, claim: Claim, prev: Claim | None) -> tuple[SaidClaim | None, Reason | None]:
        """The claim said: its sentences and the facts they state by name, for a system that uses the
        facts without reading the text (a CRM note); or why it may not be said."""
        sentences = [] if isinstance(claim, PassageClaim) else self.slotted(claim, prev)
        for sentence in sentences:
            verdict = check_sentence(sentence, self.contract, self.han)
            if verdict.reason is not None:
                return None, verdict.reason
        names = dict.fromkeys(m.group(1) for sentence in sentences for m in SLOT.finditer(sentence))
        quotes = [str(self._wordings.quote(p.title, p.text, claim.wording)).strip() for p in self.quoted(claim)]
        text = JOINERS[self.locale].join([*(fill(sentence, self.values) for sentence in sentences), *quotes])
        values = {name: self._value(self.values.slots[name]) for name in names}
        if isinstance(claim, PassageClaim):
            passage = self.quotes.passages[claim.n - 1]
            values = {"article": passage.article, "version": str(passage.version), "passage": str(passage.n)}
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


def sources(passages: list[Passage]) -> list[SourceOut] | None:
    """The articles quoted, each once, in the order quoted (None: none)."""
    seen = {(p.article, p.version): SourceOut(id=p.article, title=p.title, version=p.version) for p in passages}
    return list(seen.values()) or None
