"""Fixtures for the browser tests: headless Chromium (never downloaded: Debian's
/usr/bin/chromium), a fresh page per test, and gateways started on demand."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.harness import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    Gateway,
    StartGateway,
    is_loopback,
    start_gateway,
)
from tests.fakes.anthropic import Reply

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page, Request, ViewportSize

DESKTOP: ViewportSize = {"width": 1280, "height": 900}


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            await chromium.close()


@pytest.fixture
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


@pytest.fixture
async def gateway_factory() -> AsyncIterator[StartGateway]:
    started: list[Gateway] = []

    async def start(*replies: Reply, **overrides: Any) -> Gateway:
        gateway = await start_gateway(list(replies), **overrides)
        started.append(gateway)
        return gateway

    try:
        yield start
    finally:
        for gateway in reversed(started):
            await gateway.close()
