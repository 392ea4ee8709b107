"""A page on another local origin (another port, or `localhost` against `127.0.0.1`) tries
what any web page can do without the operator's consent: an EventSource on
`/api/stream`, an `<img>` of it, a `no-cors` `fetch` POST in `text/plain`, a form POST and
a download link of a file a run made. Every one is refused before any work: the fake
upstream sees no model call and the Files API is not read. The same page, once its
origin is listed in GATEWAY_CORS_ORIGINS, streams a run and reads the file."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway.http import keys
from tests.browser.harness import Gateway, StartGateway, browser_test
from tests.conftest import read_events
from tests.fakes.anthropic import Reply, Text
from tests.test_code_execution import SHEET, code_turns

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page

pytestmark = browser_test

ATTACK = """<!doctype html><html><body>
<iframe name="sink"></iframe>
<form id="form" method="POST" action="{gw}/api/stream" enctype="text/plain" target="sink">
<input name='{{"query": "form", "x": "' value='"}}'></form>
<a id="download" href="{gw}/api/files/{file_id}" download target="_blank">the file</a>
<script>
window.seen = {{}};
const es = new EventSource("{gw}/api/stream?query=eventsource");
es.onmessage = () => {{ window.seen.eventsource = "message"; }};
es.onerror = () => {{ window.seen.eventsource ||= "error"; es.close(); }};
const img = new Image();
img.onerror = () => {{ window.seen.img = "error"; }};
img.src = "{gw}/api/stream?query=img";
fetch("{gw}/api/research", {{method: "POST", mode: "no-cors",
  headers: {{"Content-Type": "text/plain"}}, body: '{{"query": "no-cors"}}'}})
  .then(r => {{ window.seen.nocors = r.type; }}, () => {{ window.seen.nocors = "error"; }});
document.getElementById("form").submit();
</script></body></html>"""

ALLOWED = """<!doctype html><html><body><script>
window.seen = {{events: []}};
const es = new EventSource("{gw}/api/stream?query=allowed");
es.onmessage = e => {{
  const event = JSON.parse(e.data);
  window.seen.events.push(event.type);
  if (event.type === "final") {{ window.seen.outcome = event.outcome; es.close(); }}
}};
fetch("{gw}/api/files/{file_id}").then(r => r.arrayBuffer())
  .then(b => {{ window.seen.file_bytes = b.byteLength; }});
fetch("{gw}/api/research", {{method: "POST", headers: {{"Content-Type": "application/json"}},
  body: JSON.stringify({{query: "fetch"}})}}).then(r => {{ window.seen.research = r.status; }});
</script></body></html>"""


class Attacker:
    """Another local web server: the page it serves is set per test."""

    def __init__(self, host: str) -> None:
        self.html = ""
        app = web.Application()
        app.router.add_get("/", self.page)
        self.server = TestServer(app, host="127.0.0.1")
        self.host = host

    async def page(self, request: web.Request) -> web.Response:
        return web.Response(text=self.html, content_type="text/html")

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.server.port}"


@pytest_asyncio.fixture(loop_scope="session", params=["127.0.0.1", "localhost"])
async def attacker(request: pytest.FixtureRequest) -> AsyncIterator[Attacker]:
    """The page's host: 127.0.0.1 on another port (the same site as the gateway) or
    `localhost` (another site)."""
    site = Attacker(request.param)
    await site.server.start_server()
    try:
        yield site
    finally:
        await site.server.close()


async def made_file(gateway: Gateway) -> str:
    """A run (from the gateway's own client, no browser) that makes a spreadsheet."""
    async with aiohttp.ClientSession() as http:
        body = {"query": "revenue", "skills": ["xlsx"]}
        async with http.post(gateway.page_url("/api/stream"), json=body) as response:
            assert response.status == 200
            events = await read_events(response)
    [file] = [e for e in events if e["type"] == "file"]
    return str(file["file_id"])


def gateway_origin(gateway: Gateway) -> str:
    return gateway.url.rstrip("/")


def answered(gateway: Gateway) -> Counter[tuple[str, str, str]]:
    """What the gateway answered so far: (method, route, status) -> how many times."""
    app = gateway.servers[-1].app
    assert app is not None
    counts: Counter[tuple[str, str, str]] = Counter()
    for family in app[keys.METRICS].registry.collect():
        for sample in family.samples:
            if sample.name == "claude_request_duration_ms_count":
                labels = sample.labels
                counts[labels["method"], labels["route"], labels["status"]] += int(sample.value)
    return counts


async def until(predicate: Callable[[], bool], timeout_s: float = 15.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not predicate():
            await asyncio.sleep(0.05)


async def test_a_foreign_page_starts_nothing_and_reads_nothing(
    page: Page, gateway_factory: StartGateway, attacker: Attacker
) -> None:
    gateway = await gateway_factory(*code_turns(), *[Reply([Text("spent")]) for _ in range(4)])
    file_id = await made_file(gateway)
    calls, file_reads = len(gateway.fake.requests), len(gateway.fake.files.requests)
    assert calls == 2
    attacker.html = ATTACK.format(gw=gateway_origin(gateway), file_id=file_id)
    before = answered(gateway)
    await page.goto(attacker.origin + "/")
    await page.click("#download")
    await page.wait_for_function("window.seen.eventsource && window.seen.img")
    await until(lambda: (answered(gateway) - before).total() >= 5)
    api = {k: n for k, n in (answered(gateway) - before).items() if k[1].startswith("/api/")}
    assert api == {  # besides, the window the link opened asks for /favicon.ico: a 404
        ("GET", "/api/stream", "403"): 2,  # the EventSource and the <img>
        ("POST", "/api/research", "403"): 1,  # the no-cors fetch in text/plain
        ("POST", "/api/stream", "403"): 1,  # the form
        ("GET", "/api/files/{file_id}", "403"): 1,  # the download link
    }
    seen = await page.evaluate("window.seen")
    assert seen["eventsource"] == "error" and seen["img"] == "error"
    await asyncio.sleep(0.5)  # anything that got through would be calling the model by now
    assert len(gateway.fake.requests) == calls  # no model call
    assert len(gateway.fake.files.requests) == file_reads  # no file bytes


async def test_the_same_page_once_its_origin_is_allowed(
    page: Page, gateway_factory: StartGateway, attacker: Attacker
) -> None:
    gateway = await gateway_factory(
        *code_turns(),
        Reply([Text("streamed")]),
        Reply([Text("answered")]),
        gateway_cors_origins=attacker.origin,
    )
    file_id = await made_file(gateway)
    attacker.html = ALLOWED.format(gw=gateway_origin(gateway), file_id=file_id)
    await page.goto(attacker.origin + "/")
    await page.wait_for_function(
        "window.seen.outcome && window.seen.file_bytes !== undefined && window.seen.research"
    )
    seen = await page.evaluate("window.seen")
    assert seen["outcome"] == "completed" and seen["events"][-1] == "final"
    assert seen["file_bytes"] == len(SHEET)
    assert seen["research"] == 200
    assert len(gateway.fake.requests) == 4  # the file's two calls, the stream, the research


AS_A_FILE = """<!doctype html><html><body><script>
window.seen = {{}};
fetch("{gw}/api/research", {{method: "POST", headers: {{"Content-Type": "application/json"}},
  body: JSON.stringify({{query: "from a file"}})}})
  .then(r => r.json()).then(answer => {{ window.seen.result = answer.text; }},
                              () => {{ window.seen.result = "refused"; }});
</script></body></html>"""


@pytest.mark.parametrize("listed", ["https://app.example", "https://app.example,null"])
async def test_a_page_opened_as_a_file_only_when_null_is_listed(
    browser: Browser, gateway_factory: StartGateway, tmp_path: Path, listed: str
) -> None:
    """A page opened from disk (the Node project's page, saved) sends `Origin: null`."""
    gateway = await gateway_factory(Reply([Text("from the gateway")]), gateway_cors_origins=listed)
    page_file = tmp_path / "page.html"
    page_file.write_text(AS_A_FILE.format(gw=gateway_origin(gateway)))
    context = await browser.new_context()
    try:
        page = await context.new_page()
        await page.goto(page_file.as_uri())
        await page.wait_for_function("window.seen.result !== undefined")
        result = await page.evaluate("window.seen.result")
    finally:
        await context.close()
    if "null" in listed:
        assert result == "from the gateway" and len(gateway.fake.requests) == 1
    else:
        assert result == "refused" and gateway.fake.requests == []
