"""A question streamed end to end: thinking, text and tool calls inline, then the outcome."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from tests.browser.harness import (
    PLAYGROUND,
    StartGateway,
    ask,
    browser_test,
    final_event,
    open_playground,
    screenshot,
    streamed_text,
    wait_for_outcome,
)
from tests.fakes.anthropic import Reply, ServerToolUse, Text, Thinking, ToolUse
from tests.test_wire import CITATION, SEARCH_RESULTS

if TYPE_CHECKING:
    from playwright.async_api import Page

pytestmark = browser_test

THOUGHT = "The user wants an echo. I will call the echo tool, then wait, then answer."
INTRO = "Let me check with the echo tool first."
ANSWER = (
    "## Result\n\nThe tool said **hello**, see [the filing](https://www.sec.gov/).\n\n"
    "| metric | value |\n|---|---:|\n| revenue | 1,024 |\n| margin | 42% |\n"
)


def echo_then_gate() -> list[Reply]:
    first = Reply(
        blocks=[
            Thinking(THOUGHT),
            Text(INTRO, chunk=5),
            ToolUse("echo", {"text": "hello"}, fragment=4),
            ToolUse("wait_for_gate", {"label": "one"}, fragment=4),
        ],
        input_tokens=1200,
        output_tokens=80,
    )
    return [first, Reply(blocks=[Text(ANSWER, chunk=6)], input_tokens=1500, output_tokens=60)]


async def body_parts(page: Page) -> list[str]:
    """The answer's blocks in order: thinking, md (text) or tool:<name>."""
    parts: list[str] = await page.eval_on_selector_all(
        "#transcript > .msg-assistant:last-child .msg-body > *",
        """nodes => nodes.map(n => n.classList.contains('tool') ? 'tool:' + n.dataset.toolName
            : n.classList.contains('thinking') ? 'thinking' : n.className)""",
    )
    return parts


async def test_stream_shows_tools_inline_live_text_and_outcome(
    page: Page, gateway_factory: StartGateway
) -> None:
    gateway = await gateway_factory(*echo_then_gate())
    await open_playground(page, gateway)
    await ask(page, "Echo hello, then answer")

    # Mid-run, held inside the gate tool: the text and the finished echo call are already
    # on the page, in the order they happened, and the gate call shows as running.
    await page.wait_for_selector(".tool[data-tool-name='wait_for_gate'][data-status='running']")
    assert await page.inner_text(".msg-assistant .md") == INTRO
    assert await page.inner_text(".tool[data-tool-name='echo'] .tool-status") == "ok"
    assert await page.inner_text(".tool[data-tool-name='echo'] .tool-input") == '{"text":"hello"}'
    assert await page.text_content(".thinking .thinking-text") == THOUGHT
    assert await page.get_attribute(".msg-assistant", "data-state") == "running"
    assert await page.inner_text("#runbar [data-bar='turn']") == "1 / 6"  # 5 rounds + answer
    await page.click(".tool[data-tool-name='echo'] .tool-result summary")
    assert "echo: hello" in await page.inner_text(".tool[data-tool-name='echo'] .tool-result pre")
    await screenshot(page, "desktop-mid-run")

    gateway.gate.opened.set()
    assert await wait_for_outcome(page) == "completed"
    final = await final_event(page)
    assert await streamed_text(page) == final["result"]
    assert await body_parts(page) == ["thinking", "md", "tool:echo", "tool:wait_for_gate", "md"]
    assert await page.inner_text(".msg-assistant h2") == "Result"
    assert await page.inner_text(".msg-assistant td:has-text('42%')") == "42%"
    link = await page.get_attribute(".msg-assistant a:has-text('the filing')", "href")
    assert link == "https://www.sec.gov/"
    assert await page.get_attribute(".thinking", "open") is None  # collapsed once complete
    assert await page.inner_text("#runbar [data-bar='turn']") == "2 / 6"
    assert await page.inner_text("#run-details [data-field='outcome']") == "completed"
    tokens = await page.inner_text("#run-details [data-field='tokens']")
    assert tokens.startswith("2,700 in · 140 out")
    trace = await page.input_value(".msg-footer .copy-field")
    assert trace and trace == final["trace_id"]
    statuses = await page.eval_on_selector_all(
        "#timeline .tl-tool", "items => items.map(i => i.dataset.status)"
    )
    assert statuses == ["ok", "ok"]
    await screenshot(page, "desktop-completed")


async def test_server_search_and_citations(page: Page, gateway_factory: StartGateway) -> None:
    hostile = {**CITATION, "url": "javascript:alert(1)", "title": "<img src=x onerror=alert(1)>"}
    gateway = await gateway_factory(
        Reply(
            blocks=[
                ServerToolUse("web_search", {"query": "nvidia"}, SEARCH_RESULTS),
                Text("Revenue rose.", citations=[CITATION, hostile]),
            ],
            input_tokens=900, cache_read=2_000, cache_creation=300,
        ),
        search_backend="anthropic",
    )  # fmt: skip
    await open_playground(page, gateway)
    await ask(page, "NVIDIA news")
    assert await wait_for_outcome(page) == "completed"
    assert await page.inner_text(".tool[data-tool-name='web_search'] .tool-status") == "ok"
    sources = page.locator(".msg-sources li")
    assert await sources.count() == 2
    assert await sources.nth(0).locator("a").get_attribute("href") == CITATION["url"]
    assert await sources.nth(1).locator("a").count() == 0  # no link but http(s)
    assert "<img" in await sources.nth(1).inner_text()  # shown as text, never as markup
    tokens = await page.inner_text("#run-details [data-field='tokens']")
    assert tokens == "900 in · 5 out · 2,000 cache read · 300 cache write"


async def test_health_badge_and_test_route(page: Page, gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory()
    await open_playground(page, gateway, "/test/claude-playground.html")
    assert await page.inner_text("#upstream-badge") == "anthropic"
    assert "claude-test-model" in await page.inner_text("#health-model")
    assert await page.inner_text("#health-backends") == "sec: offline\nsearch: offline"
    examples = await page.eval_on_selector_all("#examples .example", "els => els.length")
    assert examples >= 5


async def test_pre_stream_error_then_api_key(page: Page, gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(
        Reply(blocks=[Text("Authorised answer.")]), gateway_api_keys=("s3cret",)
    )
    await open_playground(page, gateway)
    await ask(page, "Who am I?")
    assert await wait_for_outcome(page) == "error"
    error = await page.inner_text(".msg-assistant .notice-error")
    assert "AUTHENTICATION_ERROR" in error
    assert await page.inner_text("#runbar [data-bar='state']") == "error"

    await page.click(".options summary")
    await page.fill("#api-key", "s3cret")
    await ask(page, "Who am I, with a key?")
    assert await wait_for_outcome(page) == "completed"
    assert await streamed_text(page) == "Authorised answer."


async def test_non_streaming_renders_the_json(page: Page, gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(
        Reply(blocks=[Text("Checking."), ToolUse("echo", {"text": "json"})]),
        Reply(blocks=[Text("The answer is **42**.")]),
    )
    await open_playground(page, gateway)
    await page.fill("#query", "Answer without streaming")
    await page.click("#btn-research")
    assert await wait_for_outcome(page) == "completed"
    assert await page.inner_text(".msg-assistant strong") == "42"
    assert await page.inner_text(".tool[data-tool-name='echo'] .tool-status") == "ok"
    assert await page.inner_text("#run-details [data-field='tool_calls']") == "1"


async def test_exports_transcript_html_and_debug_json(
    page: Page, gateway_factory: StartGateway, tmp_path: Path
) -> None:
    gateway = await gateway_factory(Reply(blocks=[Text("Exported *answer*.")]))
    await open_playground(page, gateway)
    await ask(page, "Something to export")
    assert await wait_for_outcome(page) == "completed"

    async with page.expect_download() as html_download:
        await page.click("#btn-export-html")
    html_path = tmp_path / "transcript.html"
    await (await html_download.value).save_as(html_path)
    html = html_path.read_text()
    assert html.startswith("<!doctype html>")
    assert "Exported <em>answer</em>." in html
    assert "Content-Security-Policy" in html
    assert "<script" not in html

    async with page.expect_download() as json_download:
        await page.click("#btn-export-debug")
    json_path = tmp_path / "debug.json"
    await (await json_download.value).save_as(json_path)
    debug = json.loads(json_path.read_text())
    run = debug["runs"][-1]
    assert run["request"] == {"query": "Something to export"}
    assert [event["seq"] for event in run["events"]] == list(range(1, len(run["events"]) + 1))
    assert run["events"][-1]["type"] == "final"
    assert debug["health"]["upstream"] == "anthropic"


async def test_every_asset_is_served(page: Page, gateway_factory: StartGateway) -> None:
    """The page's own files, with the types a browser insists on for modules and CSS."""
    gateway = await gateway_factory()
    files = sorted(path.name for path in PLAYGROUND.glob("*.*") if path.suffix != ".md")
    assert {"index.html", "app.js", "style.css", "markdown.js"} <= set(files)
    expected = {".js": "javascript", ".css": "text/css", ".html": "text/html"}
    for name in files:
        response = await page.request.get(gateway.page_url(f"/playground/{name}"))
        assert response.ok, name
        assert expected[Path(name).suffix] in response.headers["content-type"], name


async def test_max_turns_warning_and_outcome(page: Page, gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(
        Reply(blocks=[Text("One more lookup."), ToolUse("echo", {"text": "again"})]),
        Reply(blocks=[Text("Wrapping up with what I have.")]),
    )
    await open_playground(page, gateway)
    await page.click(".options summary")
    await page.fill("#max-turns", "1")
    await ask(page, "Keep going")
    assert await wait_for_outcome(page) == "max_turns"
    warning = await page.inner_text("#timeline .tl-warning")
    assert "max_turns" in warning
    assert "max_turns" in await page.inner_text(".msg-assistant .notice-warning")
    assert await page.inner_text(".tool .tool-status") == "ok"  # the last round still runs
    assert len(gateway.fake.requests) == 2  # one tool round, then the wrap-up call
    request = await page.evaluate("window.__playground.debugSnapshot().runs.at(-1).request")
    assert request == {"query": "Keep going", "max_turns": 1}


async def test_error_event_mid_stream(page: Page, gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(
        Reply(blocks=[Text("Partial answer, then ", chunk=4)], error_after=5)
    )
    await open_playground(page, gateway)
    await ask(page, "Fail halfway")
    assert await wait_for_outcome(page) == "error"
    assert "OVERLOADED_ERROR" in await page.inner_text(".msg-assistant .notice-error")
    assert await streamed_text(page) == "Partial answer, then "[:8]
    assert await page.inner_text("#run-details [data-field='state']") == "error"
    assert await page.is_enabled("#btn-stream")
    await screenshot(page, "desktop-error-event")


async def test_a_progress_note_shows_open_before_the_tool_card_it_introduces(
    page: Page, gateway_factory: StartGateway
) -> None:
    """Opus 5.5 with thinking off: its reasoning stays omitted, its note comes through."""
    note = "Let me pull the filings first."
    gateway = await gateway_factory(
        Reply([Thinking(THOUGHT), Thinking(note, progress=True), ToolUse("echo", {"text": "a"})]),
        Reply([Text("Done.")]),
        sdk_model="claude-opus-5-5",
    )
    await open_playground(page, gateway)
    await ask(page, "Echo, then answer")
    assert await wait_for_outcome(page) == "completed"
    assert await body_parts(page) == ["thinking", "tool:echo", "md"]
    assert await page.text_content(".thinking.progress .thinking-text") == note
    assert await page.get_attribute(".thinking.progress", "open") is not None  # stays open
    assert await page.inner_text(".thinking.progress .thinking-label") == "Note"
