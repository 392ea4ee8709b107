"""Stop and reconnect: the page shows the run's real end, and a dropped connection
re-attaches by itself with no gap and no repeated text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.browser.harness import (
    StartGateway,
    ask,
    browser_test,
    final_event,
    open_playground,
    screenshot,
    stats,
    streamed_text,
    wait_for_outcome,
)
from tests.fakes.anthropic import Reply, Text, ToolUse

if TYPE_CHECKING:
    from playwright.async_api import Page, Request, Route

pytestmark = browser_test

LONG_TEXT = " ".join(f"word{i:03d}" for i in range(150))


def is_cancel(request: Request) -> bool:
    return request.method == "POST" and request.url.endswith("/cancel")


def is_reattach(request: Request) -> bool:
    return request.method == "GET" and "/api/stream/" in request.url


async def test_stop_mid_tool_cancels_the_run(page: Page, gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(
        Reply(blocks=[Text("Waiting on the gate."), ToolUse("wait_for_gate", {"label": "stop"})]),
    )
    await open_playground(page, gateway)
    await ask(page, "Wait forever")
    await page.wait_for_selector(".tool[data-status='running']")

    async with page.expect_request(is_cancel) as cancel:
        await page.click("#runbar-stop")
    run_id = await page.evaluate("window.__playground.runId()")
    assert (await cancel.value).url.endswith(f"/api/runs/{run_id}/cancel")

    assert await wait_for_outcome(page) == "cancelled"
    assert (await final_event(page))["outcome"] == "cancelled"
    assert gateway.gate.cancelled == 1  # the server really stopped the tool
    assert len(gateway.fake.requests) == 1
    assert await page.inner_text(".tool .tool-status") == "interrupted"
    assert await page.inner_text("#run-details [data-field='outcome']") == "cancelled"
    assert await page.is_enabled("#btn-stream")
    assert await page.is_disabled("#btn-stop")
    await screenshot(page, "desktop-cancelled")


async def test_stop_while_text_streams(page: Page, gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(Reply(blocks=[Text(LONG_TEXT, chunk=4)], delay_s=0.02))
    await open_playground(page, gateway)
    await ask(page, "Talk for a while")
    await page.wait_for_function("window.__playground.transcriptText().includes('word010')")
    await page.click("#btn-stop")
    assert await wait_for_outcome(page) == "cancelled"
    shown = await streamed_text(page)
    assert LONG_TEXT.startswith(shown) and "word010" in shown and len(shown) < len(LONG_TEXT)
    assert len(gateway.fake.requests) == 1


async def test_dropped_connection_reattaches_without_gap_or_repeat(
    page: Page, gateway_factory: StartGateway
) -> None:
    gateway = await gateway_factory(
        Reply(blocks=[Text("First I wait. "), ToolUse("wait_for_gate", {"label": "drop"})]),
        Reply(blocks=[Text(LONG_TEXT, chunk=12)], delay_s=0.01),
    )
    await open_playground(page, gateway)
    await ask(page, "Survive two network drops")
    await page.wait_for_selector(".tool[data-status='running']")

    # Drop 1, while a tool runs: the page re-attaches from the last seq it saw.
    seen = await page.evaluate("window.__playground.lastSeq()")
    async with page.expect_request(is_reattach) as reattach:
        assert await page.evaluate("window.__playground.dropConnection()")
    request = await reattach.value
    assert (await request.header_value("last-event-id")) == str(seen)
    assert f"after={seen}" in request.url
    await page.wait_for_function("window.__playground.stats().reconnects === 1")

    # Drop 2, in the middle of streaming text; events missed meanwhile are replayed.
    gateway.gate.opened.set()
    await page.wait_for_function("window.__playground.transcriptText().includes('word040')")
    assert await page.evaluate("window.__playground.dropConnection()")
    await page.wait_for_function("window.__playground.stats().reconnects === 2")

    assert await wait_for_outcome(page) == "completed"
    final = await final_event(page)
    assert await streamed_text(page) == final["result"]
    assert final["result"] == "First I wait. \n\n" + LONG_TEXT
    seqs = await page.evaluate("window.__playground.events().map(e => e.seq)")
    assert seqs == list(range(1, len(seqs) + 1))
    assert (await stats(page))["reconnects"] == 2


async def test_stream_cut_mid_event_resumes_from_last_full_event(
    page: Page, gateway_factory: StartGateway
) -> None:
    """The first response ends in the middle of an event (as a proxy cutting it would):
    the partial event is dropped, and the page re-attaches after the last whole one."""
    gateway = await gateway_factory(
        Reply(blocks=[Text("Part one."), ToolUse("echo", {"text": "cut"})]),
        Reply(blocks=[Text("Part two, the end.")]),
    )

    whole: list[int] = []

    async def cut(route: Route) -> None:
        response = await route.fetch()
        body = await response.body()
        kept = body[: body.index(b'"type":"turn_complete"') + 10]
        whole.extend(int(block.split(b"\n")[0][4:]) for block in kept.split(b"\n\n")[:-1])
        await route.fulfill(response=response, body=kept)

    await page.route("**/api/stream", cut)
    await open_playground(page, gateway)
    async with page.expect_request(is_reattach) as reattach:
        await ask(page, "Cut me off")
    assert await (await reattach.value).header_value("last-event-id") == str(whole[-1])

    assert await wait_for_outcome(page) == "completed"
    final = await final_event(page)
    assert await streamed_text(page) == final["result"] == "Part one.\n\nPart two, the end."
    result = await stats(page)
    assert result["reconnects"] == 1 and result["duplicates"] == 0
    types = await page.evaluate("window.__playground.events().map(e => e.type)")
    assert types.count("turn_complete") == 2  # the cut one came back whole, once


async def test_reattach_retries_then_gives_up_on_unknown_run(
    page: Page, gateway_factory: StartGateway
) -> None:
    """Failed re-attach attempts are retried with backoff; a 404 (run expired) ends it."""
    gateway = await gateway_factory(
        Reply(blocks=[Text("Holding."), ToolUse("wait_for_gate", {"label": "retry"})]),
        Reply(blocks=[Text("Released.")]),
    )
    attempts: list[str] = []

    async def flaky(route: Route) -> None:
        attempts.append(route.request.url)
        if len(attempts) <= 2:
            await route.abort("connectionreset")
        else:
            await route.continue_()

    await page.route("**/api/stream/*", flaky)
    await open_playground(page, gateway)
    await ask(page, "Retry the re-attach")
    await page.wait_for_selector(".tool[data-status='running']")
    assert await page.evaluate("window.__playground.dropConnection()")
    await page.wait_for_selector("#runbar[data-state='reconnecting']")
    await page.wait_for_function("window.__playground.stats().reconnects === 1")
    gateway.gate.opened.set()
    assert await wait_for_outcome(page) == "completed"
    assert len(attempts) == 3
    assert await streamed_text(page) == "Holding.\n\nReleased."

    # A run the server no longer knows: the page says so instead of retrying forever.
    gateway.gate.opened.clear()
    gateway.fake.add(
        Reply(blocks=[Text("Again."), ToolUse("wait_for_gate", {"label": "gone"})]),
    )
    await page.unroute("**/api/stream/*")
    await page.route(
        "**/api/stream/*",
        lambda route: route.fulfill(
            status=404,
            content_type="application/json",
            body='{"error":{"code":"NOT_FOUND","message":"No run (unknown or expired)"}}',
        ),
    )
    await ask(page, "Lose the run")
    await page.wait_for_selector(
        "#transcript > .msg-assistant:last-child .tool[data-status='running']"
    )
    assert await page.evaluate("window.__playground.dropConnection()")
    assert await wait_for_outcome(page) == "error"
    notice = await page.inner_text("#transcript > .msg-assistant:last-child .notice-error")
    assert "NOT_FOUND" in notice and "no longer available" in notice
    assert await page.is_enabled("#btn-stream")
