"""Helpers for the browser tests: full-page screenshots to tests/browser/screenshots/ (ignored by git),
the widget's text, a tampered card list."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Page

SCREENSHOTS = Path(__file__).parent / "screenshots"


async def screenshot(page: Page, name: str) -> Path:
    SCREENSHOTS.mkdir(exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    await page.screenshot(path=str(path), full_page=True)
    return path


async def widget_text(page: Page) -> str:
    """Everything the chat widget shows or says to a screen reader: its visible text, its labels and
    its placeholders (it renders in a shadow root)."""
    text: str = await page.locator("[data-bill-assistant]").evaluate(
        """host => {
            const root = host.shadowRoot;
            const said = [root.querySelector("section").innerText];
            for (const node of root.querySelectorAll("[aria-label], [placeholder]")) {
                said.push(node.getAttribute("aria-label") || "", node.getAttribute("placeholder") || "");
            }
            return said.join("\\n");
        }"""
    )
    return text


async def pick_foreign_card(page: Page, ref: str) -> None:
    """The page tampered with: the widget's card list given `ref` (not the customer's), and it chosen."""
    await page.evaluate(
        """(ref) => {
            const select = document.querySelector("[data-bill-assistant]").shadowRoot.querySelector("select");
            select.add(new Option(ref, ref));
            select.value = ref;
        }""",
        ref,
    )
