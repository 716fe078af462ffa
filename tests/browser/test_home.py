"""The address `run` prints first, in Chromium, in English and in en-XA: `/` leads to the console and
the API docs, and neither it nor the console's sign-in page logs an error (no 404 for /favicon.ico,
nothing the CSP blocks)."""

from __future__ import annotations

import pytest
from playwright.async_api import ConsoleMessage, Page, Response, expect

from app.settings import Settings
from tests.browser.tongue import Tongue
from tests.servers import Serve, ThreadedServer

ENV = {"ENGINE": "off", "DEMO_PAGE": "1", "BATCH_WORKER": "0"}


@pytest.fixture
def server(served: Serve) -> ThreadedServer:
    return served(Settings.from_env(ENV))


async def test_the_root_leads_to_the_console_with_no_error_on_the_way(
    page: Page, server: ThreadedServer, tongue: Tongue
) -> None:
    t = tongue.t
    errors: list[str] = []
    failed: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(message.text)

    def on_response(response: Response) -> None:
        if response.status >= 400:
            failed.append(f"{response.status} {response.url}")

    page.on("console", on_console)
    page.on("response", on_response)
    await page.goto(f"{server.url}/")
    await expect(page.get_by_role("heading", name=t("Bill Assistant"))).to_be_visible()
    await expect(page.get_by_role("link", name=t("The demo"))).to_have_attribute("href", "/demo")
    await expect(page.get_by_role("link", name=t("The API reference"))).to_have_attribute("href", "/schema")
    await tongue.says_no_english(page)
    icon = await page.request.get(f"{server.url}/favicon.ico")
    assert icon.status == 200
    await page.get_by_role("link", name=t("The agent console")).click()
    await expect(page).to_have_url(f"{server.url}/console/login")
    await page.wait_for_load_state("networkidle")
    assert (errors, failed) == ([], [])
    await tongue.says_no_english(page)
