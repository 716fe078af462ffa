"""Helpers for the browser tests: full-page screenshots to tests/browser/screenshots/ (ignored by git)."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Page

SCREENSHOTS = Path(__file__).parent / "screenshots"


async def screenshot(page: Page, name: str) -> Path:
    SCREENSHOTS.mkdir(exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    await page.screenshot(path=str(path), full_page=True)
    return path
