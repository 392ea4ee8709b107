"""A run refused by a per-key limit: the playground says which limit and when to retry."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.browser.harness import (
    StartGateway,
    ask,
    browser_test,
    open_playground,
    wait_for_outcome,
)
from tests.fakes.anthropic import Reply, Text

if TYPE_CHECKING:
    from playwright.async_api import Page

pytestmark = browser_test


async def test_a_429_says_which_limit_and_when(page: Page, gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(Reply(blocks=[Text("First.")]), gateway_rate_limit_per_min=1)
    await open_playground(page, gateway)
    await ask(page, "One")
    assert await wait_for_outcome(page) == "completed"
    await ask(page, "Two")
    assert await wait_for_outcome(page) == "error"
    notice = await page.inner_text(".msg-assistant:last-of-type .notice-error")
    assert "RATE_LIMIT_ERROR" in notice
    assert "over its run starts per minute; try again in " in notice
