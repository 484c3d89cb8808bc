"""The one headless Chromium launcher of the tests (Debian's /usr/bin/chromium, driven
by Playwright), and a page that records every console error and script error.

A CSP violation, a script error or a script that hostile text managed to run would
show up in the page's `problems` list, which tests assert empty.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from playwright.async_api import Browser, Page, async_playwright

from tests.support.web import CHROMIUM_ARGS

CHROMIUM = "/usr/bin/chromium"


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """A headless Chromium for one test, closed afterwards."""
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()


async def new_page(browser: Browser, problems: list[str]) -> Page:
    """A fresh page whose console errors and warnings and script errors land in `problems`."""
    page = await browser.new_page()
    page.on(
        "console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None
    )
    page.on("pageerror", lambda e: problems.append(str(e)))
    return page
