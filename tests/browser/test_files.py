"""Code execution in the playground: the code's call shows as a server tool, the file it
made gets a download button with its name and size, and a click saves the file's bytes;
a page on another key sees the gateway's 404 instead."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tests.browser.harness import (
    StartGateway,
    ask,
    browser_test,
    open_playground,
    screenshot,
    wait_for_outcome,
)
from tests.test_code_execution import SHEET, code_turns

if TYPE_CHECKING:
    from playwright.async_api import Page

pytestmark = browser_test

KEYS = "alice:key-alice,bob:key-bob"
CODE_CALL = ".tool[data-tool-name='bash_code_execution']"
ECHO_CALL = ".tool[data-tool-name='echo']"
DOWNLOAD = ".msg-assistant:last-child .msg-files button.file-download"


async def lines(page: Page, selector: str) -> int:
    """How many lines the element's text takes on screen."""
    count: int = await page.eval_on_selector(
        selector,
        """el => {
            const range = document.createRange();
            range.selectNodeContents(el);
            return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
        }""",
    )
    return count


async def run_with_code_execution(page: Page, key: str) -> None:
    """Open the options, tick code execution, ask for skill xlsx with `key`, and run."""
    await page.click("details.options > summary")
    await page.check("#code-execution")
    await page.fill("#skills", "xlsx")
    await page.fill("#api-key", key)
    await ask(page, "Put NVIDIA's quarterly revenue in a spreadsheet")
    assert await wait_for_outcome(page) == "completed"


async def test_the_file_the_code_made_downloads_byte_for_byte(
    page: Page, gateway_factory: StartGateway
) -> None:
    gateway = await gateway_factory(*code_turns(), gateway_api_keys=KEYS)
    await open_playground(page, gateway)
    await run_with_code_execution(page, "key-alice")

    # The page asked for code execution and the xlsx skill, and the gateway passed them on.
    [run] = (await page.evaluate("window.__playground.debugSnapshot()"))["runs"]
    assert run["request"]["code_execution"] is True and run["request"]["skills"] == ["xlsx"]
    events = await page.evaluate("window.__playground.events()")
    assert not gateway.fake.rejected
    first = gateway.fake.requests[0]
    assert first["container"]["skills"][0]["skill_id"] == "xlsx"
    assert any(tool.get("name") == "code_execution" for tool in first["tools"])

    # The code's call: a card marked as run by the API (the echo call is not), finished,
    # with its command as input, and no duration (nobody here timed it).
    assert await page.get_attribute(CODE_CALL, "data-status") == "ok"
    assert await page.get_attribute(CODE_CALL, "data-server") == "true"
    assert await page.is_visible(f"{CODE_CALL} .tool-where")
    assert await page.inner_text(f"{CODE_CALL} .tool-where") == "run by the API"
    assert await page.inner_text(f"{CODE_CALL} .tool-duration") == ""
    assert "python make_sheet.py" in await page.inner_text(f"{CODE_CALL} .tool-input")
    assert await page.get_attribute(ECHO_CALL, "data-server") is None
    assert not await page.is_visible(f"{ECHO_CALL} .tool-where")
    assert await page.inner_text(".tl-tool:has-text('bash_code_execution') .tl-detail") == (
        "ok · run by the API"
    )

    # The file event: one download button naming the file and its size.
    [made] = gateway.fake.files.files.values()
    [file] = [event for event in events if event["type"] == "file"]
    assert file["file_id"] == made.id
    assert await page.locator(DOWNLOAD).count() == 1
    label = await page.inner_text(DOWNLOAD)
    assert label == f"Download {made.filename} (50.0 KB)"
    assert await page.get_attribute(DOWNLOAD, "data-file-id") == made.id
    # Its timeline entry: a long name does not squeeze the turn into a column of letters.
    assert await page.inner_text(".tl-file .tl-detail") == "turn 1"
    assert await lines(page, ".tl-file .tl-detail") == 1
    await screenshot(page, "desktop-file-download")

    async with page.expect_download() as waiting:
        await page.click(DOWNLOAD)
    download = await waiting.value
    assert download.suggested_filename == made.filename
    saved = await download.path()
    assert saved.read_bytes() == SHEET
    assert await page.inner_text(DOWNLOAD) == label  # back to its label, no failure shown
    assert await page.locator(".msg-assistant:last-child .notice-error").count() == 0
    assert [path for path, _ in gateway.fake.files.requests][-1] == f"/v1/files/{made.id}/content"


async def test_a_page_on_another_key_is_shown_the_404(
    page: Page, gateway_factory: StartGateway
) -> None:
    gateway = await gateway_factory(*code_turns(), gateway_api_keys=KEYS)
    await open_playground(page, gateway)
    await run_with_code_execution(page, "key-alice")
    await page.fill("#api-key", "key-bob")

    async with page.expect_response(lambda r: "/api/files/" in r.url) as waiting:
        await page.click(DOWNLOAD)
    response = await waiting.value
    assert response.status == 404
    assert response.request.headers["authorization"] == "Bearer key-bob"
    await page.wait_for_selector(f"{DOWNLOAD}:has-text('failed: 404 NOT_FOUND')")
    assert await page.is_enabled(DOWNLOAD)  # free to try again, e.g. with the right key
    notice = await page.inner_text(".msg-assistant:last-child .notice-error")
    assert "NOT_FOUND" in notice
    body = json.loads(await response.text())
    assert body["error"]["message"] in notice
    await screenshot(page, "desktop-file-refused")
