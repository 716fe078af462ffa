"""Traffic files: one JSON object per line, arrivals in time order, made from the seeded data
(`generate`) or from the audit rows of the traffic a bank really had (`export`).

{"at": 0.412, "tenant": "northbridge", "channel": "widget", "account_ref": "A-1042",
 "question": "Did my payment arrive?", "locale": "en", "customer_ref": "C-1042", "as_of": "2026-11-10"}

Channels: `widget` (a customer in the chat widget: a session token, then the SSE stream), `api`
and `batch` (POST /v1/explanations). `as_of`, when set, is the date the question was asked about.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from datetime import date, datetime

import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from app import locales
from app.data import replay as replay_data
from app.data.directory import tenant_people
from app.domain.vocabulary import Channel, Locale
from app.pii.masker import Masker


class Questions(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What a locale's customers ask in a generated traffic file (prompts/locales/<locale>/traffic.json)."""

    questions: dict[str, list[str]]  # by intent


# (intent, share): the mix customers send after a statement.
SHARES = (("bill_change", 0.45), ("payment", 0.25), ("charge", 0.15), ("fees_interest", 0.10), ("out_of_scope", 0.05))


def question_mix() -> list[tuple[str, float, dict[str, list[str]]]]:
    """(intent, share, each locale's questions for it, by locale)."""
    asked = {locale: locales.read(locale, "traffic.json", Questions).questions for locale in locales.locales()}
    return [(intent, share, {locale: words[intent] for locale, words in asked.items()}) for intent, share in SHARES]


QUESTION_MIX = question_mix()


class Arrival(msgspec.Struct, frozen=True, kw_only=True):
    at: float  # seconds from the start of the file
    tenant: str
    channel: Channel
    account_ref: str
    question: str
    locale: Locale
    customer_ref: str = ""  # whose session token the widget holds
    as_of: date | None = None


async def population(conn: AsyncConnection, tenants: Sequence[str]) -> dict[str, list[tuple[str, Locale, str]]]:
    """Each tenant's (account ref, customer locale, customer ref) triples."""
    result: dict[str, list[tuple[str, Locale, str]]] = {}
    for slug, ref, locale, customer in await replay_data.population(conn, tenants):
        result.setdefault(slug, []).append((ref, locale, customer))
    return result


def arrival_times(rate: float, duration_s: float, process: str, rng: random.Random) -> Iterator[float]:
    """Poisson arrivals; "bursty" alternates calm stretches with bursts at 4x the rate (same mean)."""
    at = 0.0
    while True:
        if process == "bursty":
            burst = int(at // 5) % 5 == 0  # one 5-second burst in every 25 seconds
            current = rate * (4.0 if burst else 0.25)
        else:
            current = rate
        at += rng.expovariate(current)
        if at >= duration_s:
            return
        yield at


def generate(
    people: dict[str, list[tuple[str, Locale, str]]],
    *,
    rate: float,
    duration_s: float,
    process: str = "poisson",
    batch_share: float = 0.2,
    widget_share: float = 0.3,
    seed: int = 7,
) -> list[Arrival]:
    rng = random.Random(seed)
    tenants = sorted(people)
    sizes = [len(people[t]) for t in tenants]
    mix = question_mix()
    shares = [share for _, share, _ in mix]
    arrivals = []
    for at in arrival_times(rate, duration_s, process, rng):
        tenant = rng.choices(tenants, weights=sizes)[0]
        ref, locale, customer = rng.choice(people[tenant])
        if (other := rng.random()) < 0.1:  # some customers write in another language, the draw says which
            others = [name for name in mix[0][2] if name != locale]
            locale = others[int(other / 0.1 * len(others))]
        _, _, asked = rng.choices(mix, weights=shares)[0]
        question = rng.choice(asked.get(locale, asked[locales.default()]))
        draw = rng.random()
        channel: Channel = "batch" if draw < batch_share else "widget" if draw < batch_share + widget_share else "api"
        arrivals.append(
            Arrival(
                at=round(at, 4),
                tenant=tenant,
                channel=channel,
                account_ref=ref,
                question=question,
                locale=locale,
                customer_ref=customer,
            )
        )
    return arrivals


def dumps(arrivals: Sequence[Arrival]) -> bytes:
    return b"".join(msgspec.json.encode(a) + b"\n" for a in arrivals)


def loads(data: bytes) -> list[Arrival]:
    decoder = msgspec.json.Decoder(Arrival)
    return [decoder.decode(line) for line in data.splitlines() if line.strip()]


async def export(
    conn: AsyncConnection, since: datetime, until: datetime, tenant: str | None, *, keep_text: bool = False
) -> list[Arrival]:
    """The answered requests as a traffic file's arrivals, times from the first; personal data in
    the questions replaced (app/pii/masker.py) unless `keep_text`, with each bank's whole customer
    directory (read once per export, not per question)."""
    rows = await replay_data.answered(conn, since, until, tenant)
    first = rows[0].arrived if rows else None
    people = await tenant_people(conn, sorted({row.slug for row in rows})) if rows and not keep_text else {}
    maskers = {slug: Masker(p.names, p.currencies) for slug, p in people.items()}
    return [
        Arrival(
            at=round((row.arrived - first).total_seconds(), 4),
            tenant=row.slug,
            channel=row.channel,
            account_ref=row.account_ref,
            question=row.question if keep_text else maskers[row.slug].mask(row.question, row.locale),
            locale=row.locale,
            customer_ref=row.customer_ref,
            as_of=row.as_of,
        )
        for row in rows
    ]
