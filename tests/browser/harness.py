"""What the browser tests share: Chromium flags, test tools, and a gateway wired to the fake
Anthropic server, all on 127.0.0.1 and in the test's own event loop."""

from __future__ import annotations

import asyncio
import importlib.util
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest
from aiohttp.test_utils import TestServer
from prometheus_client import CollectorRegistry

from gateway.http.app import create_app
from gateway.ops.metrics import Metrics
from gateway.runs.tools import StaticToolset
from gateway.settings import Settings
from tests.fakes.anthropic import FakeAnthropic, Reply
from tests.fakes.tools import Echo
from tools.base import Tool, ToolContext, ToolInput
from tools.registry import ToolRegistry

if TYPE_CHECKING:
    from playwright.async_api import Page

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
PLAYGROUND = Path(__file__).resolve().parents[2] / "playground"
XSS_IMG = "<img src=x onerror=window.__xss=1>"
XSS_SCRIPT = "<script>window.__xss=2</script>"

_HAVE_BROWSER = importlib.util.find_spec("playwright") is not None and os.access(CHROMIUM, os.X_OK)
requires_browser = pytest.mark.skipif(
    not _HAVE_BROWSER, reason="needs the playwright package and /usr/bin/chromium"
)
browser_test = [pytest.mark.browser, requires_browser, pytest.mark.asyncio(loop_scope="session")]


def is_loopback(url: str) -> bool:
    """Only the gateway on 127.0.0.1 (and in-page data:/blob: URLs) may be reached."""
    parts = urlsplit(url)
    return parts.scheme in ("data", "blob", "about") or parts.hostname in ("127.0.0.1", "localhost")


class GateInput(ToolInput):
    label: str
    """A name for this wait, shown in the result."""


class Gate(Tool[GateInput]):
    """Block until the test opens the gate: a run paused mid-tool, without sleeps."""

    name = "wait_for_gate"
    input_model = GateInput

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.opened = asyncio.Event()
        self.cancelled = 0

    async def run(self, args: GateInput, ctx: ToolContext) -> str:
        self.entered.set()
        try:
            await self.opened.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return f"gate {args.label} opened"


class FetchInput(ToolInput):
    url: str
    """The page to fetch."""


class HostilePage(Tool[FetchInput]):
    """Fetch a web page (this one answers with markup that tries to run script)."""

    name = "fetch_page"
    input_model = FetchInput

    async def run(self, args: FetchInput, ctx: ToolContext) -> str:
        return f"Page {args.url} says: {XSS_IMG} and {XSS_SCRIPT} (end of page)"


@dataclass
class Gateway:
    """A running gateway: its base URL, the fake upstream behind it, and its gate tool."""

    url: str
    fake: FakeAnthropic
    gate: Gate
    servers: list[TestServer] = field(default_factory=list)

    def page_url(self, path: str = "/") -> str:
        return self.url.rstrip("/") + path

    async def close(self) -> None:
        self.gate.opened.set()
        for server in reversed(self.servers):
            await server.close()


StartGateway = Callable[..., Awaitable[Gateway]]


async def start_gateway(replies: list[Reply], **overrides: Any) -> Gateway:
    """The real app on 127.0.0.1 port 0, its upstream the fake scripted with `replies`."""
    fake = FakeAnthropic(replies)
    fake_server = TestServer(fake.app(), host="127.0.0.1")
    await fake_server.start_server()
    values: dict[str, Any] = {
        "anthropic_api_key": "sk-test",
        "anthropic_base_url": str(fake_server.make_url("")).rstrip("/"),
        "gateway_upstream": "anthropic",
        "gateway_resume_grace_s": 20.0,
        "gateway_heartbeat_s": 5.0,
        "sdk_model": "claude-test-model",
        "sdk_max_turns": 5,
        "sdk_system_prompt": "You are a test.",
    }
    values.update(overrides)
    settings = Settings(_env_file=None, **values)
    gate = Gate()
    registry = ToolRegistry([Echo(), gate, HostilePage()], timeout_s=30.0)
    toolset = StaticToolset(registry, backends={"sec": "offline", "search": "offline"})
    app = create_app(settings, toolset=toolset, metrics=Metrics(CollectorRegistry()))
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    return Gateway(str(server.make_url("/")), fake, gate, [fake_server, server])


async def start_demo_gateway(**overrides: Any) -> Gateway:
    """The gateway as `make run` starts it without a key: the offline demo model and the
    real offline tools (bundled EDGAR snapshot, local search index)."""
    values: dict[str, Any] = {
        "gateway_upstream": "demo",
        "sec_source": "offline",
        "search_backend": "offline",
        "sdk_model": "claude-demo",
        "gateway_heartbeat_s": 5.0,
    }
    values.update(overrides)
    app = create_app(Settings(_env_file=None, **values), metrics=Metrics(CollectorRegistry()))
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    return Gateway(str(server.make_url("/")), FakeAnthropic(), Gate(), [server])


# ---------------------------------------------------------------- page helpers


async def open_playground(page: Page, gateway: Gateway, path: str = "/") -> None:
    await page.goto(gateway.page_url(path))
    await page.wait_for_selector("html[data-ready='true']")
    await page.wait_for_selector("#health[data-status='healthy']")


async def ask(page: Page, query: str) -> None:
    await page.fill("#query", query)
    await page.click("#btn-stream")


async def wait_for_outcome(page: Page) -> str:
    """Wait for the last answer to end; its outcome (completed, cancelled, error...)."""
    answer = await page.wait_for_selector("#transcript > .msg-assistant:last-child[data-outcome]")
    assert answer is not None
    outcome = await answer.get_attribute("data-outcome")
    assert outcome is not None
    return outcome


async def final_event(page: Page) -> dict[str, Any]:
    event: dict[str, Any] = await page.evaluate("window.__playground.finalEvent()")
    return event


async def streamed_text(page: Page) -> str:
    text: str = await page.evaluate("window.__playground.transcriptText()")
    return text


async def stats(page: Page) -> dict[str, Any]:
    value: dict[str, Any] = await page.evaluate("window.__playground.stats()")
    return value


async def screenshot(page: Page, name: str, *, full_page: bool = True) -> None:
    """Save a screenshot to look at (tests/browser/artifacts, not committed)."""
    ARTIFACTS.mkdir(exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full_page)
