"""Headless Debian chromium driven by Playwright; never a browser downloaded at run time.
Screenshots: tests/browser/helpers.py; the language a test runs in: tests/browser/tongue.py."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, async_playwright

from app.api.app import create_app
from app.settings import Settings
from tests.browser.tongue import Tongue
from tests.pseudo_locale import PSEUDO, SOURCE, pseudo_locales
from tests.servers import Serve, ThreadedServer

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="session")
def chromium() -> str:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: ./scripts/dev test installs Debian's chromium")
    return CHROMIUM


@pytest.fixture(scope="session")
async def browser(chromium: str) -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=chromium, args=["--no-sandbox", "--disable-background-networking"]
        )
        yield browser
        await browser.close()


@pytest.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    context = await browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-GB")
    page = await context.new_page()
    yield page
    await context.close()


@pytest.fixture
def tongue(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Tongue]:
    """The language the test runs in (tests/browser/tongue.py): en-XA, the console speaking it too; a
    test that reads English as well says so (`@pytest.mark.parametrize("tongue", BOTH, indirect=True)`)."""
    locale = getattr(request, "param", PSEUDO)
    if locale == SOURCE:
        yield Tongue(SOURCE)
        return
    with pseudo_locales(tmp_path / "locales", console=True):
        yield Tongue(PSEUDO)


@pytest.fixture
async def served(browser: Browser, database_url: str) -> AsyncIterator[Serve]:
    """Starts the service with `settings` on `url` (default: the test database) for this test. When the
    test ends, every page closes before the servers stop: an open page holds its conversation's feed
    (an EventSource, for ten minutes), and a server stopped under it would wait out its 10 s join,
    then poll on in its thread until the page went."""
    servers: list[ThreadedServer] = []

    def start(settings: Settings, url: str | None = None) -> ThreadedServer:
        servers.append(ThreadedServer(create_app(settings, url or database_url)))
        return servers[-1]

    yield start
    for context in browser.contexts:
        await context.close()
    for server in servers:
        server.stop()
