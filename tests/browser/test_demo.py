"""The page against the real thing, offline: the demo model and the bundled SEC snapshot."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.browser.harness import (
    StartGateway,
    browser_test,
    final_event,
    open_playground,
    screenshot,
    streamed_text,
    wait_for_outcome,
)

if TYPE_CHECKING:
    from playwright.async_api import Page

pytestmark = browser_test


async def test_example_question_on_the_demo_model(
    page: Page, gateway_factory: StartGateway
) -> None:
    gateway = await gateway_factory(demo=True)
    await open_playground(page, gateway)
    assert await page.inner_text("#upstream-badge") == "demo"
    assert await page.inner_text("#upstream-note") == "offline demo model, rule-based"

    await page.click("#examples .example:has-text('Tesla')")
    assert await page.input_value("#query") == "Find Tesla's 10-K filings since 2020"
    assert await wait_for_outcome(page) == "completed"
    final = await final_event(page)
    assert await streamed_text(page) == final["result"]
    assert await page.eval_on_selector_all(".msg-assistant .tool", "cards => cards.length") >= 1
    statuses = await page.eval_on_selector_all(
        ".msg-assistant .tool", "cards => cards.map(c => c.dataset.status)"
    )
    assert set(statuses) <= {"ok", "error"}
    assert "10-K" in await page.inner_text(".msg-assistant .msg-body")
    await screenshot(page, "desktop-demo-tesla")
