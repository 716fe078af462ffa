"""Where a newcomer lands: `/` links the demo (when on), the console and the API docs, under the
console pages' CSP; `/favicon.ico` is an icon, not the JSON 404 every page's console showed."""

from __future__ import annotations

import re

from litestar.testing import AsyncTestClient

from app.api.app import create_app
from app.settings import Settings

ENV = {"ENGINE": "off", "BATCH_WORKER": "0"}


def _links(html: str) -> list[str]:
    return re.findall(r'href="([^"]+)"', html)


async def test_the_root_links_the_demo_the_console_and_the_api_docs(database_url: str) -> None:
    for demo, shown in (("1", True), ("0", False)):
        app = create_app(Settings.from_env({**ENV, "DEMO_PAGE": demo}), database_url)
        async with AsyncTestClient(app=app) as client:
            page = await client.get("/")
            assert page.status_code == 200
            assert page.headers["content-type"].startswith("text/html")
            assert "default-src 'self'" in page.headers["content-security-policy"]
            links = _links(page.text)
            assert {"/console", "/schema", "/schema/openapi.json"} <= set(links)
            assert ("/demo" in links) is shown
            for link in set(links) - {"/demo"}:  # every link leads somewhere (the demo's needs its seeded bank)
                assert (await client.get(link)).status_code == 200, link


async def test_the_favicon_is_served(database_url: str) -> None:
    async with AsyncTestClient(app=create_app(Settings.from_env(ENV), database_url)) as client:
        icon = await client.get("/favicon.ico")
        assert icon.status_code == 200
        assert icon.headers["content-type"].startswith("image/svg+xml")
        assert icon.content.startswith(b"<svg")
