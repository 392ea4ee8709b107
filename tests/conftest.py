"""Shared fixtures: the fake Anthropic server, small test tools, and a gateway wired to them."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry
from pytest_aiohttp import AiohttpClient, AiohttpServer

from gateway.http.app import create_app
from gateway.ops.metrics import Metrics
from gateway.runs.tools import StaticToolset
from gateway.settings import Settings
from gateway.sse import parse_frames
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.tools import Big, Crash, Echo, Fail, Sleep
from tools.registry import ToolRegistry

GatewayFactory = Callable[..., Awaitable[TestClient[Any, Any]]]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """In CI (GATEWAY_TESTS_REQUIRE_ALL=1) a skip for a missing program is a failure."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("GATEWAY_TESTS_REQUIRE_ALL") == "1":
        report.outcome = "failed"
        report.longrepr = f"skipped, but CI requires every test to run: {report.longrepr}"


@pytest.fixture
def fake() -> FakeAnthropic:
    return FakeAnthropic()


@pytest.fixture
def sleep_tool() -> Sleep:
    return Sleep()


@pytest.fixture
def registry(sleep_tool: Sleep) -> ToolRegistry:
    return ToolRegistry(
        [Echo(), sleep_tool, Fail(), Crash(), Big()], timeout_s=1.0, max_result_chars=5_000
    )


@pytest.fixture
def metrics() -> Metrics:
    return Metrics(CollectorRegistry())


@pytest.fixture
async def fake_server(fake: FakeAnthropic, aiohttp_server: AiohttpServer) -> TestServer:
    return await aiohttp_server(fake.app())


def settings_for(fake_server: TestServer, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "anthropic_api_key": "sk-test",
        "anthropic_base_url": str(fake_server.make_url("")).rstrip("/"),
        "gateway_upstream": "anthropic",
        "gateway_heartbeat_s": 5.0,
        "gateway_resume_grace_s": 0.3,
        "gateway_upstream_max_retry_wait_s": 5.0,
        "sdk_max_turns": 5,
        "sdk_system_prompt": "You are a test.",
        "sdk_model": "claude-test-model",
        "gateway_gc_freeze": False,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)


@pytest.fixture
async def make_gateway(
    fake_server: TestServer, registry: ToolRegistry, metrics: Metrics,
    aiohttp_client: AiohttpClient,
) -> GatewayFactory:  # fmt: skip
    async def make(
        tracer_provider: TracerProvider | None = None, **overrides: Any
    ) -> TestClient[Any, Any]:
        settings = settings_for(fake_server, **overrides)
        toolset = StaticToolset(registry, backends={"test": "local"})
        app = create_app(
            settings, toolset=toolset, metrics=metrics, tracer_provider=tracer_provider
        )
        return await aiohttp_client(app)

    return make


@pytest.fixture
async def gateway(make_gateway: GatewayFactory) -> TestClient[Any, Any]:
    return await make_gateway()


async def read_events(response: ClientResponse) -> list[dict[str, Any]]:
    """Every event of an SSE response, to its end."""
    return parse_frames(await response.read())


async def stream(client: TestClient[Any, Any], **body: Any) -> list[dict[str, Any]]:
    response = await client.post("/api/stream", json=body)
    assert response.status == 200, await response.text()
    return await read_events(response)


async def iter_events(response: ClientResponse) -> AsyncIterator[dict[str, Any]]:
    """Events as they arrive."""
    buffer = b""
    async for chunk in response.content.iter_any():
        buffer += chunk
        *complete, buffer = buffer.split(b"\n\n")
        for block in complete:
            yield event_of_block(block)


def event_of_block(block: bytes) -> dict[str, Any]:
    events = parse_frames(block + b"\n\n")
    return events[0] if events else {"type": "_comment", "raw": block.decode()}


def unmarked(value: Any) -> Any:
    """`value` without prompt-cache markers: what the history holds, whatever the breakpoint."""
    if isinstance(value, list):
        return [unmarked(v) for v in value]
    if isinstance(value, dict):
        return {k: unmarked(v) for k, v in value.items() if k != "cache_control"}
    return value


def tool_results(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The `tool_result` blocks of a user message (it ends with the budget note too)."""
    return [b for b in unmarked(message["content"]) if b.get("type") == "tool_result"]


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] if e["type"] != "tool_call" else f"tool_call:{e['phase']}" for e in events]
