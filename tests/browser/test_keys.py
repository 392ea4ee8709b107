"""The playground says which key it uses and what that key spent today (/api/keys/self)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.browser.harness import StartGateway, ask, browser_test, open_playground, wait_for_outcome
from tests.fakes.anthropic import Reply, Text

if TYPE_CHECKING:
    from playwright.async_api import Page

pytestmark = browser_test

SHOWS = "text => document.getElementById('key-info').textContent.includes(text)"


async def test_the_page_shows_its_key_and_its_spend_today(
    page: Page, gateway_factory: StartGateway
) -> None:
    gateway = await gateway_factory(
        Reply(blocks=[Text("Counted.")], input_tokens=12, output_tokens=3),
        gateway_api_keys="alice:key-alice",
    )
    await open_playground(page, gateway)
    await page.wait_for_function(SHOWS, arg="not accepted")  # no key typed yet
    await page.click(".options summary")
    await page.fill("#api-key", "key-alice")
    await ask(page, "Count me")
    assert await wait_for_outcome(page) == "completed"
    await page.wait_for_function(SHOWS, arg="1 runs")
    text = await page.inner_text("#key-info")
    assert text.startswith("key: alice · today $") and "15 tokens" in text
