"""An answer whose audit row cannot be written once its text has streamed (issue 34, item 5's other
half): the stream ends with an `error` event the widget shows, in the answer's language, instead of
breaking off (which the widget read as a lost connection). Here the audit's insert waits on a lock
this test holds on the answers table, and the proxy in front of the database cuts every connection
of the app and refuses new ones."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.api.app import create_app
from app.domain.vocabulary import Locale
from app.prompts import render_notice
from app.settings import Settings
from tests.chat_streams import sse
from tests.db_proxy import DatabaseProxy, waiting_on_a_lock
from tests.factories import customer, document
from tests.servers import ThreadedServer
from tests.waiting import until

ENV = {"ENGINE": "off", "SESSION_SECRET": "s" * 32, "API_KEY_CACHE_TTL": "0", "BATCH_WORKER": "0"}


@pytest.mark.parametrize(("question", "locale"), [("Did my payment arrive?", "en"), ("我的还款到账了吗？", "zh-CN")])
async def test_an_answer_that_cannot_be_audited_ends_its_stream_with_an_error(
    make_tenant: Any,
    load: Any,
    engine: AsyncEngine,
    database_proxy: tuple[DatabaseProxy, str],
    question: str,
    locale: Locale,
) -> None:
    tenant = await make_tenant("interactive")
    await load(document(tenant.slug, [customer()]))
    cut, through = database_proxy
    server = ThreadedServer(create_app(Settings.from_env(ENV), through))
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            key = {"Authorization": f"Bearer {tenant.key}"}
            token = (await client.post("/v1/sessions", json={"customer_ref": "C-1001"}, headers=key)).json()["token"]
            auth = {"Authorization": f"Bearer {token}"}
            body = {"account_ref": "A-1", "question": question, "as_of": "2026-11-10"}
            async with engine.connect() as lock:
                await lock.begin()
                await lock.execute(text("LOCK TABLE answers IN SHARE ROW EXCLUSIVE MODE"))  # inserts wait
                asked = asyncio.create_task(client.post("/v1/chat", json=body, headers=auth))
                await until("the audit's insert to wait on the lock", lambda: waiting_on_a_lock(engine))
                cut.set("refuse")  # every connection of the app cut, new ones refused
                response = await asyncio.wait_for(asked, 30)
                await lock.rollback()
    finally:
        cut.set("forward")
        server.stop()
    assert response.status_code == 200
    events = sse(response.text)
    names = [name for name, _ in events]
    assert names == ["conversation", "facts", "error"]  # no `final`: the answer was never audited
    assert events[-1] == ("error", {"error": "answer_not_saved", "message": render_notice("not_saved", locale)})
