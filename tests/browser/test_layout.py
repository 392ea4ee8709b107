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


PREFACE = "\n\n".join(
    f"Step {n}: I read the filing list, then the annual report, and note what it says about "
    "revenue, margins and the segments before moving on to the next document."
    for n in range(1, 16)
)
ANSWER = "\n\n".join(f"Finding {n}: revenue grew in every segment this year." for n in range(12))
LAST_LINE = "That is the whole answer."

# Boxes in viewport coordinates: the run bar, the working tool's name, the answer's end.
GEOMETRY = """() => {
  const box = (el) => el ? el.getBoundingClientRect().toJSON() : null;
  return {
    viewport: innerHeight,
    bar: box(document.getElementById('runbar')),
    name: box(document.querySelector(".tool[data-status='running'] .tool-name")),
    answer: box(document.querySelector('#transcript > .msg-assistant:last-child')),
    side: box(document.querySelector('.side-col')),
  };
}"""
TOOL_NAME_SHOWN = """() => {
  const name = document.querySelector(".tool[data-status='running'] .tool-name");
  if (!name) return false;
  const top = name.getBoundingClientRect().top, bottom = name.getBoundingClientRect().bottom;
  return top >= document.getElementById('runbar').getBoundingClientRect().bottom
    && bottom <= innerHeight && window.scrollY > 0;
}"""
ANSWER_END_SHOWN = """() => {
  const answer = document.querySelector('#transcript > .msg-assistant:last-child');
  const bottom = answer.getBoundingClientRect().bottom;
  return bottom <= innerHeight + 1 && bottom >= innerHeight / 2;
}"""


async def wait_for_layout(page: Page, condition: str, what: str) -> None:
    try:
        await page.wait_for_function(condition, timeout=5_000)
    except Exception as exc:  # a timeout: say what the page looked like instead
        geometry = await page.evaluate(GEOMETRY)
        raise AssertionError(f"{what}: {geometry}") from exc


async def test_phone_follows_the_answer_not_the_page(
    page: Page, gateway_factory: StartGateway
) -> None:
    """At 390x844 the side panels sit below the transcript: the page follows the end of
    the answer, not the end of the document, and the sticky run bar never covers the
    name of the tool that is working."""
    await page.set_viewport_size({"width": 390, "height": 844})
    gateway = await gateway_factory(
        Reply(blocks=[Text(PREFACE, chunk=80), ToolUse("wait_for_gate", {"label": "x" * 300})]),
        Reply(blocks=[Text(f"{ANSWER}\n\n{LAST_LINE}", chunk=60)]),
    )
    await open_playground(page, gateway)
    await ask(page, "How did revenue develop, segment by segment?")
    await gateway.gate.entered.wait()
    await wait_for_layout(page, TOOL_NAME_SHOWN, "the working tool's name is not in view")
    assert (await page.evaluate(GEOMETRY))["bar"]["height"] < 44  # one slim line on a phone
    await screenshot(page, "phone-follow-mid-run", full_page=False)

    gateway.gate.opened.set()
    assert await wait_for_outcome(page) == "completed"
    await wait_for_layout(page, ANSWER_END_SHOWN, "the end of the answer is not in view")
    geometry = await page.evaluate(GEOMETRY)
    assert geometry["side"]["top"] >= geometry["viewport"] - 1  # the panels stay below
    answer = await page.inner_text("#transcript > .msg-assistant:last-child")
    assert LAST_LINE in answer
    assert "1 tool call" in answer and "1 tool calls" not in answer  # counted in words
    await screenshot(page, "phone-follow-completed", full_page=False)
