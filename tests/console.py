"""The agent console as the tests drive it: its settings, the agents' password, the CSRF token of a page,
and a sign-in over HTTP (any httpx-like client: AsyncTestClient or httpx.AsyncClient) or in a browser."""

from __future__ import annotations

import re
from typing import Any, Protocol

from playwright.async_api import Page, expect

from app.api.console.words import words
from app.settings import Settings

PASSWORD = "correct horse battery staple"  # every agent the tests make (conftest's make_bank)
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


class Response(Protocol):
    @property
    def text(self) -> str: ...


def console_settings(**extra: str) -> Settings:
    """No engine, cookies over plain HTTP; every test client has one address, so the per-address
    sign-in throttle (tested in test_console_signin.py) is out of the way."""
    env = {"ENGINE": "off", "COOKIE_SECURE": "0", "BATCH_WORKER": "0", "SIGNIN_CLIENT_ATTEMPTS": "100000"}
    return Settings.from_env(env | extra)


def csrf_of(page: Response) -> str:
    """The CSRF token a console page's forms carry."""
    found = CSRF.search(page.text)
    assert found, page.text
    return found.group(1)


async def sign_in(client: Any, slug: str, username: str = "ana", password: str = PASSWORD) -> Any:
    """Posts the sign-in form with its CSRF token; the response (303 to the console when it worked)."""
    form = await client.get("/console/login")
    data = {"csrf_token": csrf_of(form), "tenant": slug, "username": username, "password": password}
    return await client.post("/console/login", data=data, follow_redirects=False)


async def signed_in(client: Any, slug: str, username: str = "ana") -> str:
    """Signs in; the new session's CSRF token."""
    response = await sign_in(client, slug, username)
    assert response.status_code == 303, response.text
    return csrf_of(await client.get("/console"))


async def sign_in_page(page: Page, base_url: str, slug: str, username: str = "ana", password: str = PASSWORD) -> None:
    """Signs in through the console's own form in the browser (the console sends a visitor without a
    session there), in the language the console speaks; with the right password, waits for the
    console's first page."""
    said = words()["page"]
    await page.goto(f"{base_url}/console")
    await expect(page.get_by_role("heading", name=said["login"]["title"])).to_be_visible()
    await page.get_by_label(said["login"]["tenant"]).fill(slug)
    await page.get_by_label(said["login"]["username"]).fill(username)
    await page.get_by_label(said["login"]["password"]).fill(password)
    await page.get_by_role("button", name=said["login"]["submit"]).click()
    if password == PASSWORD:
        await expect(page.get_by_role("heading", name=said["find"])).to_be_visible()
