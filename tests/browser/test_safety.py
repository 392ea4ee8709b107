"""Nothing from the model or a tool runs in the page; the parsers hold up to hostile input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.browser.harness import (
    XSS_IMG,
    XSS_SCRIPT,
    StartGateway,
    ask,
    browser_test,
    open_playground,
    screenshot,
    wait_for_outcome,
)
from tests.fakes.anthropic import Reply, Text, ToolUse

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page

pytestmark = browser_test

MODEL_XSS = (
    f"The model echoes {XSS_IMG} and [a link](javascript:window.__xss=3) "
    "and <a href=x onclick=window.__xss=4>this</a>."
)
DANGEROUS = "#transcript img, #transcript script, #transcript iframe, #transcript [onerror], " + (
    "#transcript [onclick], #transcript a[href^='javascript'], #transcript a[href^='data']"
)


async def test_tool_result_and_model_html_show_as_text(
    page: Page, gateway_factory: StartGateway, tmp_path: Path
) -> None:
    gateway = await gateway_factory(
        Reply(blocks=[Text(MODEL_XSS), ToolUse("fetch_page", {"url": "https://example.com/"})]),
        Reply(blocks=[Text(f"The page contained {XSS_SCRIPT} which is now harmless.")]),
    )
    await open_playground(page, gateway)
    await ask(page, "Fetch the hostile page")
    assert await wait_for_outcome(page) == "completed"
    await page.click(".tool[data-tool-name='fetch_page'] .tool-result summary")

    preview = await page.inner_text(".tool[data-tool-name='fetch_page'] .tool-result pre")
    assert XSS_IMG in preview and XSS_SCRIPT in preview
    assert await page.is_visible(".tool-result pre")
    answer = await page.inner_text(".msg-assistant .msg-body")
    assert XSS_IMG in answer and XSS_SCRIPT in answer
    await page.click(".link-removed")  # the javascript: link is plain text now
    await page.click("#log-panel summary")  # the raw log shows the same text, escaped
    assert await page.eval_on_selector_all(DANGEROUS, "nodes => nodes.length") == 0
    assert await page.evaluate("typeof window.__xss") == "undefined"
    await screenshot(page, "desktop-xss-as-text")

    async with page.expect_download() as download:
        await page.click("#btn-export-html")
    exported = tmp_path / "transcript.html"
    await (await download.value).save_as(exported)
    html = exported.read_text()
    for forbidden in ("<img", "<script", "<a href=x", 'href="javascript'):
        assert forbidden not in html
    assert "&lt;img src=x onerror=window.__xss=1&gt;" in html
    # A page of its own: writing over the playground's document would leave the playground's
    # pending timers (the key's spend, read 500 ms after a run) running against a page that
    # no longer has their elements.
    opened = await page.context.new_page()
    opened_errors: list[str] = []
    opened.on("pageerror", lambda error: opened_errors.append(str(error)))
    await opened.set_content(html)
    assert await opened.evaluate("typeof window.__xss") == "undefined"
    assert not opened_errors
    await opened.close()


MARKDOWN_CASES: list[tuple[str, str]] = [
    ("# Title", "<h1>Title</h1>"),
    (
        "**b** and *i* and `c` and ~~d~~",
        "<p><strong>b</strong> and <em>i</em> and <code>c</code> and <del>d</del></p>",
    ),
    ("<b>x</b> & <img src=x>", "<p>&lt;b&gt;x&lt;/b&gt; &amp; &lt;img src=x&gt;</p>"),
    ("[x](javascript:alert(1))", '<p><span class="link-removed" title="link removed'),
    ("[x](data:text/html,<script>alert(1)</script>)", '<p><span class="link-removed"'),
    ("[ok](https://example.com/a)", '<p><a href="https://example.com/a" target="_blank" rel='),
    ("![alt](https://example.com/i.png)", '<p><a href="https://example.com/i.png"'),
    ("- a\n- b\n  - c\n- d", "<ul><li>a</li><li>b<ul><li>c</li></ul></li><li>d</li></ul>"),
    ("5. five\n6. six", '<ol start="5"><li>five</li><li>six</li></ol>'),
    ("| a | b |\n|:--|--:|\n| 1 | 2 |", '<div class="table-wrap"><table><thead><tr><th style='),
    (
        "```js\nlet x = '<script>';\n```",
        '<pre class="code" data-lang="js"><code class="lang-js">let x = \'&lt;script&gt;\';</code>',
    ),
    ("snake_case_word and 2 * 3 * 4", "<p>snake_case_word and 2 * 3 * 4</p>"),
    ("line one\nline two", "<p>line one<br>line two</p>"),
    ("> quoted", "<blockquote><p>quoted</p></blockquote>"),
    ("**not closed yet", "<p>**not closed yet</p>"),
    ("```\nstill streaming", '<pre class="code"><code>still streaming</code></pre>'),
]


async def test_markdown_renderer(page: Page, gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory()
    await open_playground(page, gateway)
    sources = [source for source, _ in MARKDOWN_CASES]
    rendered: list[str] = await page.evaluate(
        """async (sources) => {
            const { renderMarkdown } = await import('/playground/markdown.js');
            return sources.map((source) => {
                const box = document.createElement('div');
                box.append(renderMarkdown(source));
                return box.innerHTML;
            });
        }""",
        sources,
    )
    for (source, expected), html in zip(MARKDOWN_CASES, rendered, strict=True):
        assert html.startswith(expected), (source, html)
    assert not any("<img" in html or "<script" in html for html in rendered)


SSE_TEXT = (
    ": ping\n\n"
    'id: 1\ndata: {"type":"delta","text":"héllo 🌍"}\n\n'
    'id: 2\r\ndata: {"type":"delta","text":"a\\nb"}\r\n\r\n'
    "data: line1\ndata:line2\n\n"
    'id: 3\rdata: {"type":"final"}\r\r'
    'id: 4\ndata: {"type":"cut off"'
)
SSE_EVENTS: list[dict[str, Any]] = [
    {"id": "1", "data": '{"type":"delta","text":"héllo 🌍"}'},
    {"id": "2", "data": '{"type":"delta","text":"a\\nb"}'},
    {"id": None, "data": "line1\nline2"},
    {"id": "3", "data": '{"type":"final"}'},
]


async def test_sse_parser_survives_any_chunk_boundary(
    page: Page, gateway_factory: StartGateway
) -> None:
    """Split the stream at every character (two chunks), and feed it one byte at a time
    through fetch's reader, cutting the multi-byte characters too."""
    gateway = await gateway_factory()
    await open_playground(page, gateway)
    result: dict[str, Any] = await page.evaluate(
        """async (text) => {
            const { createSseParser, readSse } = await import('/playground/sse.js');
            const collect = (feed) => {
                const events = [], comments = [];
                const parser = createSseParser({
                    onEvent: (e) => events.push(e), onComment: (c) => comments.push(c) });
                feed(parser);
                parser.end();
                return JSON.stringify({ events, comments });
            };
            const whole = collect((p) => p.push(text));
            const splits = [];
            for (let i = 0; i <= text.length; i++) {
                splits.push(collect((p) => { p.push(text.slice(0, i)); p.push(text.slice(i)); }));
            }
            const bytes = new TextEncoder().encode(text);
            const body = new ReadableStream({ start(controller) {
                for (const b of bytes) controller.enqueue(new Uint8Array([b]));
                controller.close();
            } });
            const events = [], comments = [];
            await readSse(new Response(body), {
                onEvent: (e) => events.push(e), onComment: (c) => comments.push(c) });
            return { whole, splits, bytewise: JSON.stringify({ events, comments }) };
        }""",
        SSE_TEXT,
    )
    expected = {"events": SSE_EVENTS, "comments": ["ping"]}
    assert json.loads(result["whole"]) == expected
    assert all(split == result["whole"] for split in result["splits"])
    assert result["bytewise"] == result["whole"]


async def test_page_content_security_policy_blocks_inline_script(
    browser: Browser, gateway_factory: StartGateway
) -> None:
    """Defence in depth: even markup that got into the DOM could not run script."""
    gateway = await gateway_factory()
    context = await browser.new_context()
    try:
        tab = await context.new_page()
        await open_playground(tab, gateway)
        fired = await tab.evaluate(
            """() => new Promise((resolve) => {
                document.body.insertAdjacentHTML('beforeend',
                    '<img id="probe" src="data:," onerror="window.__csp = 1">');
                const probe = document.getElementById('probe');
                probe.addEventListener('error', () => resolve(window.__csp));
                probe.addEventListener('load', () => resolve('loaded'));
            })"""
        )
        assert fired is None
    finally:
        await context.close()
