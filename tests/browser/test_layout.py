"""The page on a phone: one column, nothing wider than the screen, even with wide answers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.browser.harness import (
    StartGateway,
    ask,
    browser_test,
    open_playground,
    screenshot,
    wait_for_outcome,
)
from tests.fakes.anthropic import Reply, Text, ToolUse

if TYPE_CHECKING:
    from playwright.async_api import Page

pytestmark = browser_test

WIDE_ANSWER = (
    "## Revenue, five companies\n\n"
    "| Company | FY2020 | FY2021 | FY2022 | FY2023 | FY2024 | Growth | Source filing |\n"
    "|---|---:|---:|---:|---:|---:|---:|---|\n"
    "| Apple Inc. | 274,515 | 365,817 | 394,328 | 383,285 | 391,035 | 42% "
    "| 0000320193-24-000123 |\n"
    "| NVIDIA Corporation | 10,918 | 16,675 | 26,974 | 26,974 | 60,922 | 458% "
    "| 0001045810-24-000029 |\n"
    "\n```\n" + "x = " + "1234567890" * 30 + "\n```\n\n"
    "A long link: https://www.sec.gov/cgi-bin/browse-edgar?action=getcompany&CIK=0000320193"
    "&type=10-K&dateb=&owner=include&count=40 and an unbroken " + "token" * 40 + ".\n"
)


async def no_horizontal_overflow(page: Page) -> None:
    widths = await page.evaluate(
        """() => ({ doc: document.documentElement.scrollWidth, body: document.body.scrollWidth,
                    viewport: window.innerWidth })"""
    )
    assert widths["doc"] <= widths["viewport"], widths
    assert widths["body"] <= widths["viewport"], widths


async def test_phone_layout_has_no_horizontal_overflow(
    page: Page, gateway_factory: StartGateway
) -> None:
    await page.set_viewport_size({"width": 390, "height": 844})
    gateway = await gateway_factory(
        Reply(
            blocks=[
                Text("Looking up five companies."),
                ToolUse("echo", {"text": "revenue " * 40}),
                ToolUse("wait_for_gate", {"label": "phone"}),
            ]
        ),
        Reply(blocks=[Text(WIDE_ANSWER, chunk=40)]),
    )
    await open_playground(page, gateway)
    await no_horizontal_overflow(page)
    await screenshot(page, "phone-empty")

    await ask(page, "Compare revenue of Apple, NVIDIA and Alphabet in 2024")
    await page.wait_for_selector(".tool[data-status='running']")
    await no_horizontal_overflow(page)
    await screenshot(page, "phone-mid-run-viewport", full_page=False)

    gateway.gate.opened.set()
    assert await wait_for_outcome(page) == "completed"
    await page.click(".tool[data-tool-name='echo'] .tool-result summary")
    await page.click("#log-panel summary")
    await no_horizontal_overflow(page)

    main = await page.locator(".main-col").bounding_box()
    side = await page.locator(".side-col").bounding_box()
    assert main is not None and side is not None
    assert side["y"] >= main["y"] + main["height"] - 1  # one column: details below
    assert abs(side["x"] - main["x"]) < 2
    await screenshot(page, "phone-completed")
