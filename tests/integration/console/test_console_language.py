"""The console speaks the locale whose folder says `"console": true`: flip it to zh-CN (a copy of the
service's locale folders) and an agent's pages are Chinese, amounts and dates written the Chinese
way, with nothing else changed. Real Postgres, the console over HTTP."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from app import locales
from app.api.app import create_app
from tests.console import console_settings, signed_in

pytestmark = pytest.mark.bank(agents=("ana",))


@pytest.fixture
def chinese_console(tmp_path: Path) -> Iterator[str]:
    """The service's locale folders, with zh-CN's locale.json saying the console speaks it."""
    root = tmp_path / "locales"
    shutil.copytree(locales.DEFAULT_ROOT, root)
    for folder in root.iterdir():
        path = folder / "locale.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "console": folder.name == "zh-CN"}))
    locales.use(root)
    try:
        yield "zh-CN"
    finally:
        locales.use(locales.DEFAULT_ROOT)


@pytest.fixture
async def console(database_url: str, chinese_console: str) -> AsyncIterator[AsyncTestClient[Any]]:
    async with AsyncTestClient(app=create_app(console_settings(), database_url)) as client:
        yield client


async def test_a_console_in_chinese_says_all_its_words_in_chinese(console: Any, bank: Any) -> None:
    login = await console.get("/console/login")
    assert '<html lang="zh-CN">' in login.text
    assert "<title>登录 · 账单助手控制台</title>" in login.text
    await signed_in(console, bank.slug)
    page = await console.get("/console/accounts/A-1")
    assert "<h1>账户 A-1</h1>" in page.text
    # Ann's bill is 12.00 EUR higher: the console writes it the Chinese way, beside its Chinese words.
    higher = locales.money(Decimal("12.00"), "EUR", "zh-CN", sign=True)
    assert f'<tr><th scope="row">差额</th><td>{higher}</td></tr>' in page.text
    assert "偏好语言：English (英语)" in page.text  # Ann's language, by its name and the console's for it
    queue = await console.get("/console/queue")
    assert "没有人在等待。" in queue.text
    assert "Waiting conversations" not in queue.text
