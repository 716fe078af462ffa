"""POST /v1/explanations end to end: real Postgres, real app, real HTTP client."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.factories import GYM_STORY, OCT, SEPT, account, customer, document, statement, tx

QUESTION = "Why is my bill 12.00 higher than last month?"


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def test_explains_a_bill_change_with_exact_numbers(client: Any, bank: Any) -> None:
    r = await client.post(
        "/v1/explanations",
        json={"account_ref": "A-1", "question": QUESTION, "as_of": "2026-11-10"},
        headers=bearer(bank.key),
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["account_ref"] == "A-1"
    assert body["currency"] == "EUR"
    assert body["statement"] == {
        "period_start": "2026-10-01",
        "period_end": "2026-10-31",
        "due_date": "2026-11-25",
        "minimum_due": "25.00",
    }
    assert body["totals"] == {"current": "124.99", "previous": "112.99", "difference": "12.00"}
    assert body["drivers"] == [{"kind": "purchases", "label": "City Gym", "amount": "12.00"}]
    assert body["payment"] == {
        "status": "unpaid",
        "paid_amount": "0.00",
        "outstanding": "124.99",
        "as_of": "2026-11-10",
    }
    assert body["locale"] == "en"
    assert body["source"] == "fallback"
    assert "12.00 EUR more" in body["explanation"]
    assert "City Gym" in body["explanation"]
    assert "25 November 2026" in body["explanation"]
    assert {"auth", "db", "facts", "explain", "audit", "total"} <= body["timings_ms"].keys()


async def test_amounts_are_decimal_strings_and_drivers_sum_to_the_difference(
    client: Any, make_tenant: Any, load: Any
) -> None:
    tenant = await make_tenant()
    txs = [*GYM_STORY, tx("T-7", "2026-10-20", "fee", "3.10", description="Foreign transaction fee"),
           tx("T-8", "2026-10-21", "refund", "5.05", "FreshMart"), tx("T-9", "2026-10-31", "interest", "1.47"),
           tx("T-10", "2026-10-22", "adjustment", "-0.33", description="Goodwill credit")]  # fmt: skip
    await load(document(tenant.slug, [customer(accounts=[account(transactions=txs)])]))
    r = await client.post(
        "/v1/explanations", json={"account_ref": "A-1", "question": "why?"}, headers=bearer(tenant.key)
    )
    body = r.json()
    assert all(isinstance(d["amount"], str) for d in body["drivers"])
    assert sum(Decimal(d["amount"]) for d in body["drivers"]) == Decimal(body["totals"]["difference"])
    assert Decimal(body["totals"]["current"]) - Decimal(body["totals"]["previous"]) == Decimal(
        body["totals"]["difference"]
    )
    amounts = [abs(Decimal(d["amount"])) for d in body["drivers"]]
    assert amounts == sorted(amounts, reverse=True)


async def test_answers_in_the_customers_language_unless_asked_otherwise(
    client: Any, make_tenant: Any, load: Any
) -> None:
    tenant = await make_tenant()
    await load(document(tenant.slug, [customer(locale="zh-CN", accounts=[account(currency="CNY")])]))
    payload = {"account_ref": "A-1", "question": "为什么这个月账单多了12元？", "as_of": "2026-11-10"}
    zh = (await client.post("/v1/explanations", json=payload, headers=bearer(tenant.key))).json()
    assert zh["locale"] == "zh-CN"
    assert "多12.00元" in zh["explanation"]
    assert "2026年11月25日" in zh["explanation"]
    en = (await client.post("/v1/explanations", json={**payload, "locale": "en"}, headers=bearer(tenant.key))).json()
    assert en["locale"] == "en"
    assert "12.00 CNY more" in en["explanation"]


async def test_statement_period_end_selects_an_older_statement(client: Any, bank: Any) -> None:
    r = await client.post(
        "/v1/explanations",
        json={"account_ref": "A-1", "question": "September?", "statement_period_end": "2026-09-30"},
        headers=bearer(bank.key),
    )
    body = r.json()
    assert body["statement"]["period_end"] == "2026-09-30"
    assert body["totals"] == {"current": "112.99", "previous": "0.00", "difference": "112.99"}
    # Paid by the October payment of 112.99, which was posted after September closed.
    assert body["payment"]["status"] == "paid"

    missing = await client.post(
        "/v1/explanations",
        json={"account_ref": "A-1", "question": "?", "statement_period_end": "2026-09-29"},
        headers=bearer(bank.key),
    )
    assert missing.status_code == 404
    assert "no statement ending on 2026-09-29" in missing.json()["message"]


async def test_as_of_decides_the_payment_status(client: Any, make_tenant: Any, load: Any) -> None:
    tenant = await make_tenant()
    txs = [*GYM_STORY, tx("T-7", "2026-11-05", "payment", "10.00"), tx("T-8", "2026-11-28", "payment", "114.99")]
    await load(document(tenant.slug, [customer(accounts=[account(transactions=txs)])]))

    async def status(as_of: str) -> Any:
        r = await client.post(
            "/v1/explanations",
            json={"account_ref": "A-1", "question": "did my payment arrive?", "as_of": as_of},
            headers=bearer(tenant.key),
        )
        return r.json()["payment"]["status"], r.json()["payment"]["paid_amount"]

    assert await status("2026-11-01") == ("unpaid", "0.00")
    assert await status("2026-11-25") == ("partially_paid", "10.00")  # on the due date: not late yet
    assert await status("2026-11-26") == ("overdue", "10.00")  # less than the 25.00 minimum, after the due date
    assert await status("2026-11-28") == ("paid", "124.99")


async def test_first_statement_compares_with_the_opening_balance(client: Any, make_tenant: Any, load: Any) -> None:
    tenant = await make_tenant()
    txs = [tx("T-1", "2026-09-03", "purchase", "40.00", "FreshMart")]
    await load(
        document(tenant.slug, [customer(accounts=[account(statements=[SEPT], transactions=txs, opening="10.00")])])
    )
    body = (
        await client.post("/v1/explanations", json={"account_ref": "A-1", "question": "?"}, headers=bearer(tenant.key))
    ).json()
    assert body["totals"] == {"current": "50.00", "previous": "10.00", "difference": "40.00"}
    assert body["drivers"] == [{"kind": "purchases", "label": "FreshMart", "amount": "40.00"}]


async def test_openings_chain_through_every_earlier_statement(client: Any, make_tenant: Any, load: Any) -> None:
    tenant = await make_tenant()
    aug = statement("2026-08-01", "2026-08-31", "2026-09-25")
    txs = [
        tx("T-1", "2026-08-05", "purchase", "200.00", "Airline"),  # August: 200.00
        tx("T-2", "2026-09-05", "payment", "50.00"),  # September opens at 200.00, pays 50, buys 30
        tx("T-3", "2026-09-06", "purchase", "30.00", "FreshMart"),
        tx("T-4", "2026-10-06", "purchase", "30.00", "FreshMart"),  # October opens at 180.00
        tx("T-5", "2026-10-31", "interest", "2.70"),
    ]
    await load(document(tenant.slug, [customer(accounts=[account(statements=[aug, SEPT, OCT], transactions=txs)])]))
    body = (
        await client.post("/v1/explanations", json={"account_ref": "A-1", "question": "?"}, headers=bearer(tenant.key))
    ).json()
    assert body["totals"] == {"current": "212.70", "previous": "180.00", "difference": "32.70"}
    # carried balance: September 200.00 - 50.00 = 150.00; October 180.00 - 0 = 180.00
    assert body["drivers"] == [
        {"kind": "carried_balance", "label": None, "amount": "30.00"},
        {"kind": "interest", "label": None, "amount": "2.70"},
    ]


async def test_without_a_valid_key_the_answer_is_401(client: Any, bank: Any) -> None:
    payload = {"account_ref": "A-1", "question": QUESTION}
    for headers in ({}, {"Authorization": "Basic abc"}, bearer("ba_not-a-real-key"), bearer(bank.key + "x")):
        r = await client.post("/v1/explanations", json=payload, headers=headers)
        assert r.status_code == 401, headers
        assert r.headers["www-authenticate"].startswith("Bearer")
        assert r.json()["error"] == "unauthorized"


async def test_another_tenants_account_looks_exactly_like_a_missing_one(
    client: Any, bank: Any, make_tenant: Any, load: Any
) -> None:
    other = await make_tenant()
    await load(document(other.slug, [customer(accounts=[account(ref="A-OTHER")])]))
    theirs = await client.post(
        "/v1/explanations", json={"account_ref": "A-OTHER", "question": "?"}, headers=bearer(bank.key)
    )
    missing = await client.post(
        "/v1/explanations", json={"account_ref": "A-NOPE", "question": "?"}, headers=bearer(bank.key)
    )
    assert theirs.status_code == missing.status_code == 404
    assert theirs.json() == {**missing.json(), "message": missing.json()["message"].replace("A-NOPE", "A-OTHER")}
    # The owner can read it; and the same ref in two tenants is two different accounts.
    ok = await client.post(
        "/v1/explanations", json={"account_ref": "A-OTHER", "question": "?"}, headers=bearer(other.key)
    )
    assert ok.status_code == 200


@pytest.mark.parametrize(
    ("payload", "needle"),
    [
        ({"account_ref": "A-1", "question": "x" * 1001}, "length <= 1000"),
        ({"account_ref": "A-1", "question": "why\x00?"}, "control characters"),
        ({"account_ref": "A-1", "question": "why\x1b[31m?"}, "control characters"),
        ({"account_ref": "A-1", "question": "   "}, "blank"),
        ({"account_ref": "A-1", "question": "?", "tenant": "someone-else"}, "unknown field `tenant`"),
        ({"account_ref": "A-1"}, "missing required field `question`"),
        ({"account_ref": "A-1", "question": "?", "as_of": "yesterday"}, "as_of"),
        ({"account_ref": "A-1", "question": "?", "locale": "fr"}, "locale"),
        ({"account_ref": 7, "question": "?"}, "account_ref"),
        ([1, 2], "object"),
    ],
)
async def test_bad_input_is_a_400_that_says_what_is_wrong(client: Any, bank: Any, payload: Any, needle: str) -> None:
    r = await client.post("/v1/explanations", json=payload, headers=bearer(bank.key))
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["error"] == "bad_request"
    assert needle in body["message"], body


async def test_malformed_json_is_a_400(client: Any, bank: Any) -> None:
    r = await client.post(
        "/v1/explanations",
        content=b'{"account_ref": "A-1", ',
        headers={**bearer(bank.key), "Content-Type": "application/json"},
    )
    assert r.status_code == 400
    assert r.json()["error"] == "bad_request"


async def test_a_multi_line_question_is_accepted(client: Any, bank: Any) -> None:
    r = await client.post(
        "/v1/explanations",
        json={"account_ref": "A-1", "question": "Hello,\nwhy is my bill higher?\tThanks"},
        headers=bearer(bank.key),
    )
    assert r.status_code == 200


async def test_every_answer_leaves_an_audit_row(client: Any, bank: Any, engine: AsyncEngine) -> None:
    r = await client.post(
        "/v1/explanations", json={"account_ref": "A-1", "question": QUESTION}, headers=bearer(bank.key)
    )
    body = r.json()
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    "SELECT a.channel, a.question, a.locale, a.source, a.answer, a.timings, ac.ref, s.period_end::text"
                    " FROM answers a JOIN accounts ac ON ac.id = a.account_id"
                    " JOIN statements s ON s.id = a.statement_id"
                    " WHERE a.id = :id AND a.tenant_id = :tenant"
                ),
                {"id": body["answer_id"], "tenant": bank.id},
            )
        ).one()
    channel, question, locale, source, answer, timings, account_ref, period_end = row
    assert (channel, question, locale, source, account_ref, period_end) == (
        "api",
        QUESTION,
        "en",
        "fallback",
        "A-1",
        "2026-10-31",
    )
    assert answer["totals"] == body["totals"]
    assert answer["explanation"] == body["explanation"]
    assert {"auth", "db", "facts", "explain", "total"} <= timings.keys()

    # A refused request is not an answer and leaves no row.
    async with engine.connect() as conn:
        before = (
            await conn.execute(text("SELECT count(*) FROM answers WHERE tenant_id = :t"), {"t": bank.id})
        ).scalar()
    await client.post("/v1/explanations", json={"account_ref": "A-NOPE", "question": "?"}, headers=bearer(bank.key))
    async with engine.connect() as conn:
        after = (await conn.execute(text("SELECT count(*) FROM answers WHERE tenant_id = :t"), {"t": bank.id})).scalar()
    assert before == after == 1


async def test_health_ready_and_openapi(client: Any) -> None:
    assert (await client.get("/health")).json() == {"status": "ok"}
    ready = await client.get("/ready")
    assert ready.status_code == 200
    assert ready.json()["database"] == "ok"
    schema = (await client.get("/schema/openapi.json")).json()
    assert "/v1/explanations" in schema["paths"]
    assert "ExplanationRequest" in str(schema["components"])


async def test_a_charge_named_outside_the_largest_lines_is_still_found(
    client: Any, make_tenant: Any, load: Any
) -> None:
    """An answer reads a statement's largest lines from its summary; the lines of a merchant the
    question names are read as well, however small."""
    tenant = await make_tenant()
    october = [tx(f"T-{n}", "2026-10-05", "purchase", f"{50 + n}.00", f"Shop {n}") for n in range(14)]
    october.append(tx("T-99", "2026-10-20", "purchase", "2.40", "Tiny Cafe"))
    await load(document(tenant.slug, [customer(accounts=[account(statements=[SEPT, OCT], transactions=october)])]))
    r = await client.post(
        "/v1/explanations",
        json={"account_ref": "A-1", "question": "What is the Tiny Cafe charge?", "as_of": "2026-11-10"},
        headers=bearer(tenant.key),
    )
    assert r.status_code == 200, r.text
    assert r.json()["intent"] == "charge"
    assert "On 20 October 2026 your statement shows a purchase at “Tiny Cafe” of 2.40 EUR." in r.json()["explanation"]
