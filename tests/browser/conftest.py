"""Fixtures for the browser tests: headless Chromium (never downloaded: Debian's
/usr/bin/chromium), a fresh page per test, and gateways started on demand."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import pytest_asyncio

from tests.browser.harness import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    Gateway,
    StartGateway,
    is_loopback,
    start_demo_gateway,
    start_gateway,
)
from tests.fakes.anthropic import Reply

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page, Playwright, Request, ViewportSize

DESKTOP: ViewportSize = {"width": 1280, "height": 900}


class Chromium:
    """One Chromium for the session, relaunched if it went away (a crash then costs one
    test, not every test after it)."""

    def __init__(self, playwright: Playwright) -> None:
        self.playwright = playwright
        self.browser: Browser | None = None

    async def get(self) -> Browser:
        if self.browser is None or not self.browser.is_connected():
            self.browser = await self.playwright.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_ARGS
            )
        return self.browser


# Session-wide, on the session's event loop; every browser test runs on that loop too
# (harness.browser_test) and gets its own browser context, so nothing leaks between tests.
@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def chromium() -> AsyncIterator[Chromium]:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        holder = Chromium(playwright)
        try:
            yield holder
        finally:
            if holder.browser is not None and holder.browser.is_connected():
                await holder.browser.close()


@pytest_asyncio.fixture(loop_scope="session")
async def browser(chromium: Chromium) -> Browser:
    return await chromium.get()


@pytest_asyncio.fixture(loop_scope="session")
async def page(browser: Browser) -> AsyncIterator[Page]:
    """A desktop-sized page. Fails the test on a script error or on any request that
    leaves loopback (the page must work with no internet: no CDN, no web fonts)."""
    ARTIFACTS.mkdir(exist_ok=True)
    # bypass_csp: Playwright's wait_for_function polls with eval, which the page's CSP
    # forbids. It also means the XSS tests prove the renderer safe without the CSP's help.
    context = await browser.new_context(viewport=DESKTOP, accept_downloads=True, bypass_csp=True)
    errors: list[str] = []
    offsite: list[str] = []

    def on_request(request: Request) -> None:
        if not is_loopback(request.url):
            offsite.append(request.url)

    context.on("request", on_request)
    tab = await context.new_page()
    tab.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield tab
    finally:
        await context.close()
    assert not errors, f"script errors in the page: {errors}"
    assert not offsite, f"requests off loopback: {offsite}"


@pytest_asyncio.fixture(loop_scope="session")
async def gateway_factory() -> AsyncIterator[StartGateway]:
    started: list[Gateway] = []

    async def start(*replies: Reply, demo: bool = False, **overrides: Any) -> Gateway:
        """A gateway on the fake upstream scripted with `replies`, or on the demo model."""
        if demo:
            gateway = await start_demo_gateway(**overrides)
        else:
            gateway = await start_gateway(list(replies), **overrides)
        started.append(gateway)
        return gateway

    try:
        yield start
    finally:
        for gateway in reversed(started):
            await gateway.close()
