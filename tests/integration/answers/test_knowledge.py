"""The bank's own words: a library loaded all or nothing and idempotently, drafts approved by a second
person, retrieval scoped to the tenant, and answers that quote the live passage verbatim with its
source: a policy question's passage, the reason for an interest line, nothing for a question the
library does not answer. Real Postgres; the engine is off (the deterministic answer) or the fake
SGLang server (bench/fakes/sglang_server.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.app import create_app
from app.data.knowledge import approve, import_library, library, save_draft, versions
from app.data.knowledge_search import search
from app.domain.knowledge import ArticleIn, parse_library
from app.settings import Settings
from bench.fakes.plans import plan
from bench.fakes.sglang_server import RunningFake, Script
from tests.factories import GYM_STORY, account, customer, tx
from tests.waiting import until

INTEREST_TEXT = (
    "Interest is charged at 1.8% a month on any part of a statement's balance not paid by its due date. "
    "It appears on your next statement."
)
INTEREST = {
    "id": "interest-how-calculated",
    "locale": "en",
    "title": "How interest is calculated",
    "body": f"{INTEREST_TEXT}\n\nPaying the full balance by the due date means no interest on purchases.",
    "tags": ["interest"],
    "questions": ["how do you work out interest", "how is interest charged"],
}
DISPUTE_TEXT = "To dispute a charge, open it in the app and choose Dispute, or ask an agent in the chat."
DISPUTE = {
    "id": "dispute-how",
    "locale": "en",
    "title": "Disputing a charge",
    "body": DISPUTE_TEXT,
    "questions": ["how do I dispute a transaction", "report a charge I don't recognise"],
}
LATE_ZH = {
    "id": "late-payment-fee",
    "locale": "zh-CN",
    "title": "逾期还款违约金",
    "body": "到期还款日前未还最低还款额的，收取违约金25.00欧元。",
    "tags": ["Late payment fee"],
}
LIBRARY = {"articles": [INTEREST, DISPUTE, LATE_ZH]}
# October also charges 3.12 of interest: "why was I charged interest?" has a line to explain.
INTEREST_STORY = [*GYM_STORY, tx("T-7", "2026-10-31", "interest", "3.12")]


def _file(tmp_path: Path, content: Any) -> str:
    path = tmp_path / "library.json"
    path.write_text(json.dumps(content, ensure_ascii=False), encoding="utf-8")
    return str(path)


def _settings(**extra: str) -> Settings:
    return Settings.from_env({"ENGINE": "off", "API_KEY_CACHE_TTL": "0", "MAX_IN_FLIGHT": "1000", **extra})


# The bank: the library above, and Ann's account A-1 with an interest line.
pytestmark = pytest.mark.bank(
    customer(accounts=[account(transactions=INTEREST_STORY)]),
    library=tuple(parse_library(json.dumps(LIBRARY).encode())),
)


async def _explain(client: Any, key: str, question: str) -> dict[str, Any]:
    r = await client.post(
        "/v1/explanations",
        json={"account_ref": "A-1", "question": question, "as_of": "2026-11-10", "locale": "en"},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_the_import_is_idempotent_and_a_changed_article_is_a_new_version(cli: Any, tmp_path: Path) -> None:
    assert cli("tenants", "create", "kb-bank", "--name", "KB Bank").exit_code == 0
    first = cli("knowledge", "import", "--tenant", "kb-bank", _file(tmp_path, LIBRARY))
    assert first.exit_code == 0, first.output
    assert "3 new, 0 changed, 0 unchanged" in first.output
    again = cli("knowledge", "import", "--tenant", "kb-bank", _file(tmp_path, LIBRARY))
    assert "0 new, 0 changed, 3 unchanged" in again.output
    edited = {"articles": [{**DISPUTE, "body": DISPUTE_TEXT + " Disputes are free."}, INTEREST, LATE_ZH]}
    changed = cli("knowledge", "import", "--tenant", "kb-bank", _file(tmp_path, edited))
    assert "0 new, 1 changed, 2 unchanged" in changed.output
    listed = cli("knowledge", "list", "--tenant", "kb-bank").output.splitlines()
    assert "en\tdispute-how\tv2\t0 draft(s)\tDisputing a charge" in listed
    assert len(listed) == 3


def test_a_bad_file_names_the_article_and_field_and_loads_nothing(cli: Any, tmp_path: Path) -> None:
    assert cli("tenants", "create", "kb-bad", "--name", "KB Bad").exit_code == 0
    bad = {"articles": [INTEREST, {**DISPUTE, "locale": "fr"}]}
    result = cli("knowledge", "import", "--tenant", "kb-bad", _file(tmp_path, bad))
    assert result.exit_code != 0
    assert "article 2 ('dispute-how'): locale:" in result.output
    long = {"articles": [INTEREST, {**DISPUTE, "body": "x" * 1300}]}
    result = cli("knowledge", "import", "--tenant", "kb-bad", _file(tmp_path, long))
    assert "article 2 ('dispute-how', en): body: paragraph 1 has 1300 characters" in result.output
    assert cli("knowledge", "list", "--tenant", "kb-bad").output == ""


async def test_a_draft_answers_only_once_someone_else_approves_it(bank: Any, engine: AsyncEngine) -> None:
    question = "how do I dispute a transaction"
    edit = msgspec_article(DISPUTE, body="Call us to dispute a charge.")
    async with engine.begin() as conn:
        draft = await save_draft(conn, bank.id, edit, author="alice")
        live = (await search(conn, bank.id, "en", question)).fitting()
        assert [p.text for p in live] == [DISPUTE_TEXT]  # the draft does not answer yet
        with pytest.raises(PermissionError):
            await approve(conn, bank.id, draft.id, "alice")
        approved = await approve(conn, bank.id, draft.id, "bob")
        now = (await search(conn, bank.id, "en", question)).fitting()
        trail = await versions(conn, bank.id, "dispute-how", "en")
    assert (approved.status, approved.version, approved.approved_by) == ("live", 2, "bob")
    assert [(p.text, p.version) for p in now] == [("Call us to dispute a charge.", 2)]
    assert [(v.version, v.status, v.author) for v in trail] == [(2, "live", "alice"), (1, "retired", "import")]


async def test_retrieval_never_finds_another_banks_articles(bank: Any, make_tenant: Any, engine: AsyncEngine) -> None:
    other = await make_tenant()
    async with engine.begin() as conn:
        mine = (await search(conn, bank.id, "en", "how is interest charged")).fitting()
        theirs = (await search(conn, other.id, "en", "how is interest charged")).fitting()
        assert await library(conn, other.id) == []
    assert [p.article for p in mine] == ["interest-how-calculated"]
    assert theirs == []


async def test_a_policy_question_is_answered_with_the_passage_verbatim_and_its_source(
    database_url: str, bank: Any
) -> None:
    async with AsyncTestClient(app=create_app(_settings(), database_url)) as client:
        answer = await _explain(client, bank.key, "How do you work out interest?")
    assert answer["intent"] == "policy"
    assert answer["explanation"] == f"From our help article “How interest is calculated”: {INTEREST_TEXT}"
    assert answer["sources"] == [{"id": "interest-how-calculated", "title": "How interest is calculated", "version": 1}]


async def test_the_reason_for_an_interest_line_is_the_banks_passage(database_url: str, bank: Any) -> None:
    async with AsyncTestClient(app=create_app(_settings(), database_url)) as client:
        answer = await _explain(client, bank.key, "Why was I charged interest?")
    assert answer["intent"] == "fees_interest"
    assert "includes: interest charge on 31 October 2026 (3.12 EUR)." in answer["explanation"]
    assert answer["explanation"].endswith(f"From our help article “How interest is calculated”: {INTEREST_TEXT}")
    assert answer["sources"] == [{"id": "interest-how-calculated", "title": "How interest is calculated", "version": 1}]


async def test_a_question_the_library_does_not_answer_gets_no_near_miss(database_url: str, bank: Any) -> None:
    async with AsyncTestClient(app=create_app(_settings(), database_url)) as client:
        answer = await _explain(client, bank.key, "How do I open a savings account?")
    assert answer["intent"] == "out_of_scope"
    assert "sources" not in answer
    assert "ask to speak to an agent" in answer["explanation"]


async def test_an_approved_change_is_quoted_at_once_with_its_new_version(
    database_url: str, bank: Any, engine: AsyncEngine
) -> None:
    new_text = "Interest is 1.5% a month on what is unpaid after the due date."
    async with AsyncTestClient(app=create_app(_settings(), database_url)) as client:
        before = await _explain(client, bank.key, "How is interest charged?")
        async with engine.begin() as conn:
            draft = await save_draft(conn, bank.id, msgspec_article(INTEREST, body=new_text), author="alice")
            await approve(conn, bank.id, draft.id, "bob")
        after = await _explain(client, bank.key, "How is interest charged?")
    assert before["sources"][0]["version"] == 1
    assert after["sources"] == [{"id": "interest-how-calculated", "title": "How interest is calculated", "version": 2}]
    assert after["explanation"] == f"From our help article “How interest is calculated”: {new_text}"


def msgspec_article(fields: dict[str, Any], **changes: Any) -> ArticleIn:
    return ArticleIn(**{**fields, **changes})


async def _model_answer(database_url: str, bank: Any, engine: AsyncEngine, fake: RunningFake, written: str) -> Any:
    """With a second article as well ranked for the question (the model chooses between the two), the
    answer to it when the model writes `written`; and the passages offered."""
    twin = {**DISPUTE, "id": "dispute-how-2", "title": "Disputing a charge in the app", "body": "Open it, tap Dispute."}
    async with engine.begin() as conn:
        await import_library(conn, bank.id, parse_library(json.dumps({"articles": [twin]}).encode()))
        found = (await search(conn, bank.id, "en", "how do I dispute a transaction")).fitting()
    fake.fake.default = Script(text=written)
    settings = _settings(ENGINE="sglang", SGLANG_URL=fake.url, ANSWER_CACHE_FILL="0")
    async with AsyncTestClient(app=create_app(settings, database_url)) as client:
        return await _explain(client, bank.key, "how do I dispute a transaction"), found


async def test_the_model_picks_among_passages_and_the_service_quotes_the_one_picked(
    database_url: str, bank: Any, engine: AsyncEngine, fake_sglang: RunningFake
) -> None:
    answer, found = await _model_answer(database_url, bank, engine, fake_sglang, plan({"claim": "passage", "n": 2}))
    assert {p.article for p in found} == {"dispute-how", "dispute-how-2"}
    second = found[1]
    assert answer["source"] == "model"
    assert answer["explanation"] == f"From our help article “{second.title}”: {second.text}"
    assert answer["sources"] == [{"id": second.article, "title": second.title, "version": 1}]
    assert answer["claims"][0]["values"] == {"article": second.article, "version": "1", "passage": "1"}


async def test_when_the_model_finds_no_passage_fits_the_customer_is_told_so_and_offered_a_person(
    database_url: str, bank: Any, engine: AsyncEngine, fake_sglang: RunningFake
) -> None:
    answer, _ = await _model_answer(database_url, bank, engine, fake_sglang, plan({"claim": "no_answer"}))
    assert answer["source"] == "model"
    # Asked over the JSON API: no chat to point at.
    assert answer["explanation"] == (
        "I could not find an answer to this in our help content. An agent can help with it."
    )
    assert "sources" not in answer


async def test_an_approved_change_to_a_quoted_article_is_a_cache_miss(
    database_url: str, bank: Any, engine: AsyncEngine, fake_sglang: RunningFake
) -> None:
    fake_sglang.fake.default = Script(text=plan({"claim": "fees_interest"}))
    settings = _settings(ENGINE="sglang", SGLANG_URL=fake_sglang.url, BATCH_WORKER="0")
    canonical = "Why was I charged fees or interest?"
    async with AsyncTestClient(app=create_app(settings, database_url)) as client:

        async def ask() -> dict[str, Any]:
            answer = await _explain(client, bank.key, canonical)
            await until("the canonical answer's fill", lambda: client.app.state.answers.filling == 0)
            return answer

        first, cached = await ask(), await ask()
        async with engine.begin() as conn:
            draft = await save_draft(conn, bank.id, msgspec_article(INTEREST, body="Interest is 1.5% a month."), "al")
            await approve(conn, bank.id, draft.id, "bo")
        changed, cached_again = await ask(), await ask()
    assert [a["source"] for a in (first, cached, changed, cached_again)] == ["model", "cache", "model", "cache"]
    assert [a["sources"][0]["version"] for a in (first, cached, changed, cached_again)] == [1, 1, 2, 2]
    assert changed["explanation"].endswith("“How interest is calculated”: Interest is 1.5% a month.")
