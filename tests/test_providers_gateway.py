"""The same loop on another provider, and a fallback to it: the gateway against the fake
OpenAI server (which validates every request as the real API would) and the fake
Anthropic one, over HTTP with the real SDKs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from pytest_aiohttp import AiohttpServer

from gateway.ops.metrics import Metrics
from tests.conftest import GatewayFactory, iter_events, stream, types
from tests.fakes.anthropic import FakeAnthropic, Thinking, ToolUse
from tests.fakes.anthropic import Reply as AReply
from tests.fakes.anthropic import Text as AText
from tests.fakes.openai import Call, FakeOpenAI, Reply
from tests.test_metrics import value

Client = TestClient[Any, Any]


@pytest.fixture
def fake_openai() -> FakeOpenAI:
    return FakeOpenAI()


@pytest.fixture
async def openai_server(fake_openai: FakeOpenAI, aiohttp_server: AiohttpServer) -> TestServer:
    return await aiohttp_server(fake_openai.app())


@pytest.fixture
def openai_settings(openai_server: TestServer, fake_openai: FakeOpenAI) -> dict[str, Any]:
    return {
        "openai_base_url": str(openai_server.make_url("/v1")),
        "openai_api_key": fake_openai.api_key,
        "openai_model": "gpt-test",
    }


@pytest.fixture
async def on_openai(make_gateway: GatewayFactory, openai_settings: dict[str, Any]) -> Client:
    return await make_gateway(gateway_upstream="openai", **openai_settings)


def phases(events: list[dict[str, Any]], phase: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "tool_call" and e["phase"] == phase]


async def test_text_and_a_fragmented_tool_call(on_openai: Client, fake_openai: FakeOpenAI) -> None:
    fake_openai.add(
        Reply(text="Let me echo.", calls=[Call("echo", {"text": "hi " * 20}, fragment=3)]),
        Reply(text="Echoed."),
    )
    events = await stream(on_openai, query="echo")
    assert events[0]["upstream"] == "openai" and events[0]["model"] == "gpt-test"
    assert len(phases(events, "tool_input_delta")) > 10
    [use] = phases(events, "tool_use")
    assert use["tool"]["input"] == {"text": "hi " * 20}
    assert phases(events, "tool_result")[0]["preview"] == "echo: " + "hi " * 20
    final = events[-1]
    assert final["outcome"] == "completed" and final["result"] == "Let me echo.\n\nEchoed."
    assert {e["upstream"] for e in events if e["type"] == "turn_complete"} == {"openai"}
    second = fake_openai.requests[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "user"]
    assert second[2]["tool_calls"][0]["id"] == second[3]["tool_call_id"] == use["tool"]["id"]
    assert "Today's date is" in second[0]["content"]
    assert not fake_openai.rejected


async def test_three_parallel_calls_and_a_three_round_chain(
    on_openai: Client, fake_openai: FakeOpenAI
) -> None:
    fake_openai.add(
        Reply(calls=[Call("echo", {"text": "a"}), Call("sleep", {"seconds": 0.05}),
                     Call("echo", {"text": "c"})], interleave=True),
        Reply(calls=[Call("echo", {"text": "2"})]),
        Reply(calls=[Call("echo", {"text": "3"})]),
        Reply(text="chain done"),
    )  # fmt: skip
    events = await stream(on_openai, query="go")
    assert [len(phases(events, "tool_use")), events[-1]["turns"]] == [5, 4]
    tool_messages = [m for m in fake_openai.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == [
        e["tool"]["id"] for e in phases(events, "tool_use")[:3]
    ]
    assert events[-1]["outcome"] == "completed" and not fake_openai.rejected


async def test_max_turns_length_and_a_retried_429(
    make_gateway: GatewayFactory, openai_settings: dict[str, Any], fake_openai: FakeOpenAI
) -> None:
    client = await make_gateway(gateway_upstream="openai", sdk_max_turns=1, **openai_settings)
    fake_openai.add(
        Reply(status=429, headers={"retry-after-ms": "10"}, error_type="rate_limit_exceeded"),
        Reply(calls=[Call("echo", {"text": "x"})]),
        Reply(text="Wrapped up."),
    )
    events = await stream(client, query="x")
    codes = [e["code"] for e in events if e["type"] == "warning"]
    assert codes == ["upstream_retry", "max_turns"]
    assert events[-1]["outcome"] == "max_turns"
    assert fake_openai.requests[-1]["tool_choice"] == "none"
    fake_openai.add(Reply(text="cut sho", finish_reason="length"))
    assert (await stream(client, query="y"))[-1]["outcome"] == "max_tokens"


async def test_cancel_closes_the_openai_stream(on_openai: Client, fake_openai: FakeOpenAI) -> None:
    fake_openai.add(Reply(text="word " * 200, chunk=2, stall_after=20))
    response = await on_openai.post("/api/stream", json={"query": "x"})
    run_id = response.headers["x-run-id"]
    events = []
    async for event in iter_events(response):
        events.append(event)
        if event["type"] == "delta":
            await on_openai.post(f"/api/runs/{run_id}/cancel")
    assert events[-1]["outcome"] == "cancelled"
    await asyncio.wait_for(fake_openai.disconnected.wait(), 3)


async def test_fallback_to_openai_mid_run(
    make_gateway: GatewayFactory, openai_settings: dict[str, Any],
    fake: FakeAnthropic, fake_openai: FakeOpenAI, metrics: Metrics,
) -> None:  # fmt: skip
    client = await make_gateway(
        gateway_fallback_upstreams="openai", gateway_upstream_max_retries=1,
        sdk_thinking="on", **openai_settings,
    )  # fmt: skip
    fake.add(
        AReply([Thinking("I should echo."), AText("Checking."), ToolUse("echo", {"text": "1"})]),
        AReply(status=500, error_type="api_error", headers={"retry-after": "0"}),
        AReply(status=500, error_type="api_error", headers={"retry-after": "0"}),
    )
    fake_openai.add(Reply(text="Answered by the fallback."))
    events = await stream(client, query="x")
    assert events[0]["upstream"] == "anthropic"
    warnings = [e for e in events if e["type"] == "warning"]
    assert [w["code"] for w in warnings] == [
        "upstream_retry",
        "upstream_fallback",
        "history_dropped",
    ]
    assert warnings[1]["upstream"] == "anthropic" and warnings[1]["next_upstream"] == "openai"
    assert warnings[2]["dropped"] == ["thinking", "thinking_config"]
    assert [e["upstream"] for e in events if e["type"] == "turn_complete"] == [
        "anthropic",
        "openai",
    ]
    final = events[-1]
    assert final["outcome"] == "completed" and final["result"].endswith("by the fallback.")
    sent = fake_openai.requests[0]["messages"]
    tool_id = next(e["tool"]["id"] for e in events if e.get("phase") == "tool_use")
    assert sent[2]["tool_calls"][0]["id"] == sent[3]["tool_call_id"] == tool_id  # threaded
    assert not fake_openai.rejected
    assert value(metrics, "sdk_upstream_fallbacks_total", upstream="anthropic",
                 code="UNKNOWN_ERROR") == 1  # fmt: skip
    assert value(metrics, "claude_tokens_output_total", model="gpt-4.1-2025-04-14",
                 upstream="openai") == 7  # fmt: skip
    health = await (await client.get("/health")).json()
    assert [u["name"] for u in health["upstreams"]] == ["anthropic", "openai"]
    assert health["status"] == "healthy"


async def test_no_fallback_once_output_reached_the_client(
    make_gateway: GatewayFactory, openai_settings: dict[str, Any],
    fake: FakeAnthropic, fake_openai: FakeOpenAI,
) -> None:  # fmt: skip
    client = await make_gateway(gateway_fallback_upstreams="openai", **openai_settings)
    fake.add(AReply([AText("Half an answer that goes on")], error_after=5))
    events = await stream(client, query="x")
    assert types(events)[-1] == "error" and fake_openai.requests == []


async def test_the_demo_as_a_fallback(make_gateway: GatewayFactory, fake: FakeAnthropic) -> None:
    client = await make_gateway(gateway_fallback_upstreams="demo", gateway_demo_pacing_ms=0)
    fake.add(AReply(status=401, error_type="authentication_error"))
    events = await stream(client, query="What is the CIK of Marvell?")
    assert next(e["upstream"] for e in events if e["type"] == "turn_complete") == "demo"
    assert events[-1]["type"] == "final"
