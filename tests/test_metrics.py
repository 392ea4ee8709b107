"""Exact metric values after scripted runs, read from the injected registry and /metrics."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp.test_utils import TestClient

from gateway.ops.metrics import Metrics
from tests.conftest import iter_events, read_events, stream
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, ToolUse

Client = TestClient[Any, Any]


def value(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


async def test_two_turn_run_with_three_tools(
    gateway: Client, fake: FakeAnthropic, metrics: Metrics
) -> None:
    fake.add(
        Reply([ToolUse("echo", {"text": "a"}), ToolUse("fail", {}), ToolUse("nope", {})],
              input_tokens=100, output_tokens=20, cache_read=30, cache_creation=5),
        Reply([Text("done")], input_tokens=150, output_tokens=40),
    )  # fmt: skip
    await stream(gateway, query="x")
    model = {"model": "claude-test-model"}
    assert value(metrics, "sdk_runs_total", endpoint="stream", outcome="completed") == 1
    assert value(metrics, "sdk_stream_turns_count") == 1
    assert value(metrics, "sdk_stream_turns_sum") == 2
    assert value(metrics, "sdk_stream_turns_bucket", le="1.0") == 0
    assert value(metrics, "sdk_stream_turns_bucket", le="2.0") == 1
    assert value(metrics, "sdk_tool_invocations_total", tool="echo", outcome="success") == 1
    assert value(metrics, "sdk_tool_invocations_total", tool="fail", outcome="error") == 1
    assert value(metrics, "sdk_tool_invocations_total", tool="unknown", outcome="unknown_tool") == 1
    assert value(metrics, "claude_tool_invocations_total", tool="echo", status="success") == 1
    assert value(metrics, "claude_tool_invocations_total", tool="fail", status="error") == 1
    assert value(metrics, "sdk_tool_duration_seconds_count", tool="echo") == 1
    assert value(metrics, "claude_tool_duration_ms_count", tool="unknown") == 1
    answered = {**model, "upstream": "anthropic"}
    assert value(metrics, "claude_tokens_input_total", **answered) == 250
    assert value(metrics, "claude_tokens_output_total", **answered) == 60
    assert value(metrics, "claude_cache_read_tokens_total", **answered) == 30
    assert value(metrics, "claude_cache_creation_tokens_total", **answered) == 5
    assert value(metrics, "claude_stream_duration_ms_count", **model) == 1
    assert value(metrics, "sdk_stream_duration_seconds_count", endpoint="stream") == 1
    assert value(metrics, "sdk_time_to_first_event_seconds_count", endpoint="stream") == 1
    assert value(metrics, "sdk_active_streams", endpoint="stream") == 0
    assert value(metrics, "sdk_max_turns_reached_total") == 0
    route = {"method": "POST", "route": "/api/stream", "status": "200"}
    assert value(metrics, "claude_request_duration_ms_count", **route) == 1


async def test_max_turns_retries_errors_and_disconnects(
    make_gateway: Any, fake: FakeAnthropic, metrics: Metrics
) -> None:
    client = await make_gateway(sdk_max_turns=1)
    fake.add(Reply(status=529, headers={"retry-after": "0"}))
    fake.add(Reply([ToolUse("echo", {"text": "a"})]), Reply([Text("wrapped")]))
    await stream(client, query="x")
    assert value(metrics, "sdk_max_turns_reached_total") == 1
    assert value(metrics, "sdk_runs_total", endpoint="stream", outcome="max_turns") == 1
    assert value(metrics, "sdk_tool_invocations_total", tool="echo", outcome="success") == 1
    assert (
        value(
            metrics, "sdk_upstream_retries_total", reason="OVERLOADED_ERROR", upstream="anthropic"
        )
        == 1
    )
    fake.add(Reply(status=401, error_type="authentication_error"))
    await stream(client, query="x")
    failed = {"endpoint": "stream", "outcome": "AUTHENTICATION_ERROR"}
    assert value(metrics, "sdk_runs_total", **failed) == 1
    assert (
        value(
            metrics, "sdk_upstream_errors_total", code="AUTHENTICATION_ERROR", upstream="anthropic"
        )
        == 1
    )
    assert (
        value(metrics, "claude_errors_total", code="AUTHENTICATION_ERROR", path="/api/stream") == 1
    )
    await client.post("/api/stream", json={})
    assert value(metrics, "claude_errors_total", code="VALIDATION_ERROR", path="/api/stream") == 1
    fake.add(Reply([Text("word " * 100, chunk=5)], delay_s=0.02))
    response = await client.post("/api/stream", json={"query": "x"})
    async for event in iter_events(response):
        if event["type"] == "delta":
            break
    response.close()
    await fake.disconnected.wait()
    gone = {"endpoint": "stream", "outcome": "client_disconnected"}
    async with asyncio.timeout(2):
        while not value(metrics, "sdk_runs_total", **gone):
            await asyncio.sleep(0.01)
    assert value(metrics, "sdk_runs_total", **gone) == 1
    assert (
        value(metrics, "claude_errors_total", code="client_disconnected", path="/api/stream")
        is None
    )


async def test_metrics_endpoint_serves_text_format(gateway: Client, fake: FakeAnthropic) -> None:
    fake.add(Reply([Text("hi")]))
    await read_events(await gateway.post("/research-not-here"))
    await stream(gateway, query="x")
    response = await gateway.get("/metrics")
    assert response.status == 200 and response.headers["Content-Type"].startswith("text/plain")
    text = await response.text()
    assert 'sdk_runs_total{endpoint="stream",outcome="completed"} 1.0' in text
    assert 'route="unmatched"' in text and "/research-not-here" not in text
