"""The help library in the console: an agent edits an article as a draft, which answers nothing until
another agent approves it; every version stays, with who wrote and approved it; answers then quote the
new text, and the console's answer page links the version quoted. Another bank's articles are not
found. Real Postgres, the console over HTTP, the engine off."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.app import create_app
from app.data.agents import create_agent
from app.domain.knowledge import ArticleIn
from app.settings import Settings
from tests.console import PASSWORD, signed_in

OLD = "To dispute a charge, open it in the app and choose Dispute."
NEW = "To dispute a charge, ask an agent in the chat: they open the dispute with you."
ARTICLE = ArticleIn(
    id="dispute-how", locale="en", title="Disputing a charge", body=OLD, questions=["how do I dispute a charge"]
)
pytestmark = pytest.mark.bank(agents=("ana", "bo"), library=(ARTICLE,), priority_class="standard")


@pytest.fixture
async def client(database_url: str) -> AsyncIterator[AsyncTestClient[Any]]:
    env = {"ENGINE": "off", "COOKIE_SECURE": "0", "BATCH_WORKER": "0", "API_KEY_CACHE_TTL": "0"}
    async with AsyncTestClient(app=create_app(Settings.from_env(env), database_url)) as client:
        yield client


async def _explain(client: Any, key: str) -> dict[str, Any]:
    r = await client.post(
        "/v1/explanations",
        json={"account_ref": "A-1", "question": "How do I dispute a charge?", "locale": "en"},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert r.status_code == 200, r.text
    return dict(r.json())


def _versions(page: httpx.Response) -> list[tuple[str, str]]:
    return re.findall(r'data-version="(\d+)" data-status="(\w+)"', page.text)


async def test_a_draft_answers_once_another_agent_approves_it_and_every_version_stays(client: Any, bank: Any) -> None:
    csrf = await fresh_session(client, bank.slug, "ana")
    listed = await client.get("/console/library")
    assert 'data-article="dispute-how" data-locale="en"' in listed.text
    edit = {"csrf_token": csrf, "title": "Disputing a charge", "body": NEW, "tags": "", "questions": "dispute a charge"}
    saved = await client.post("/console/library/en/dispute-how/drafts", data=edit, follow_redirects=False)
    assert saved.status_code == 303
    page = await client.get("/console/library/en/dispute-how")
    assert _versions(page) == [("2", "draft"), ("1", "live")]
    assert "Another agent approves your draft" in page.text
    draft_id = re.search(r"/console/library/versions/(\d+)/approve", page.text)
    assert draft_id is None  # no button for its own author...
    before = await _explain(client, bank.key)
    assert before["explanation"] == f"From our help article “Disputing a charge”: {OLD}"  # the draft answers nothing

    bo = await fresh_session(client, bank.slug, "bo")
    page = await client.get("/console/library/en/dispute-how")
    found = re.search(r"/console/library/versions/(\d+)/approve", page.text)
    assert found is not None
    approve = f"/console/library/versions/{found.group(1)}/approve"
    ana = await fresh_session(client, bank.slug, "ana")  # ...and the route refuses it too
    refused = await client.post(approve, data={"csrf_token": ana}, follow_redirects=False)
    assert refused.status_code == 403
    assert "You wrote this draft: another agent approves it before it answers customers." in refused.text
    bo = await fresh_session(client, bank.slug, "bo")
    assert (await client.post(approve, data={"csrf_token": bo}, follow_redirects=False)).status_code == 303
    page = await client.get("/console/library/en/dispute-how")
    assert _versions(page) == [("2", "live"), ("1", "retired")]
    assert "approved by bo" in page.text

    after = await _explain(client, bank.key)
    assert after["explanation"] == f"From our help article “Disputing a charge”: {NEW}"
    assert after["sources"] == [{"id": "dispute-how", "title": "Disputing a charge", "version": 2}]
    answer_page = await client.get(f"/console/answers/{after['answer_id']}")
    assert 'href="/console/library/en/dispute-how#v2">Disputing a charge</a> (version 2)' in answer_page.text


async def test_a_refused_edit_says_why_and_keeps_what_was_written(client: Any, bank: Any) -> None:
    csrf = await fresh_session(client, bank.slug, "ana")
    edit = {"csrf_token": csrf, "title": " ", "body": NEW, "tags": "", "questions": ""}
    refused = await client.post("/console/library/en/dispute-how/drafts", data=edit, follow_redirects=False)
    assert refused.status_code == 422
    assert 'role="alert">The draft was not saved: the article: title: Expected `str` of length &gt;= 1' in refused.text
    assert NEW in refused.text


async def test_another_banks_library_is_not_found(
    client: Any, bank: Any, make_tenant: Any, engine: AsyncEngine
) -> None:
    other = await make_tenant()
    async with engine.begin() as conn:
        await create_agent(conn, other.id, "zed", "Zed", PASSWORD)
    await fresh_session(client, other.slug, "zed")
    assert (await client.get("/console/library/en/dispute-how")).status_code == 404
    assert 'data-article="dispute-how"' not in (await client.get("/console/library")).text


async def fresh_session(client: Any, slug: str, username: str) -> str:
    """This agent signed in on a client that forgets the previous agent's session; its CSRF token."""
    client.cookies.clear()
    return await signed_in(client, slug, username)
