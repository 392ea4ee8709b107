"""The playground marks each figure of an answer as the figure check found it: on the demo
(every figure sourced or derived, linked to its filing on EDGAR, the hover naming concept
and period), and on the fake model (a figure no tool gave, marked unsourced)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tests.browser.harness import (
    StartGateway,
    ask,
    browser_test,
    final_event,
    open_playground,
    screenshot,
    wait_for_outcome,
)
from tests.fakes.anthropic import Reply, Text

if TYPE_CHECKING:
    from playwright.async_api import Page

pytestmark = browser_test

MARKS = """els => els.map(e => ({tag: e.tagName, text: e.textContent, status: e.dataset.status,
                                href: e.getAttribute('href'), title: e.title}))"""


async def marks(page: Page) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = await page.eval_on_selector_all(
        ".msg-assistant:last-child .msg-body .fig", MARKS
    )
    return found


async def test_demo_figures_link_to_their_filings(
    page: Page, gateway_factory: StartGateway
) -> None:
    gateway = await gateway_factory(demo=True)
    await open_playground(page, gateway)
    await ask(page, "What was Apple's revenue in fiscal 2023?")
    assert await wait_for_outcome(page) == "completed"
    final = await final_event(page)
    found = await marks(page)
    assert final["figures"]["sourced"] >= 1
    assert len(found) == sum(final["figures"].values())
    assert {m["status"] for m in found} <= {"sourced", "derived"}
    revenue = next(m for m in found if m["text"].endswith("billion"))
    assert revenue["tag"] == "A"
    assert revenue["href"].startswith("https://www.sec.gov/Archives/edgar/data/320193/")
    assert "us-gaap:" in revenue["title"] and "2022-09-25/2023-09-30" in revenue["title"]
    summary = await page.inner_text(".msg-assistant:last-child .figures-summary")
    assert f"{final['figures']['sourced']} sourced" in summary
    await screenshot(page, "desktop-figures-demo")


async def test_an_unsourced_figure_is_marked(page: Page, gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(Reply([Text("Revenue was **$5.2 billion** in FY2024.")]))
    await open_playground(page, gateway)
    await ask(page, "Revenue?")
    assert await wait_for_outcome(page) == "completed"
    (mark,) = await marks(page)
    assert mark == {
        "tag": "MARK",
        "text": "$5.2 billion",
        "status": "unsourced",
        "href": None,
        "title": "Unsourced: no tool result of this run holds this figure",
    }
