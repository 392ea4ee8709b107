"""Sequential tools on request (`parallel_tools: false`), as the Node server allowed: the
Messages API gets `tool_choice.disable_parallel_tool_use`, Chat Completions
`parallel_tool_calls: false`; both fakes refuse what their API refuses (the flag on
`tool_choice` none, `parallel_tool_calls` without tools)."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from pytest_aiohttp import AiohttpServer

from tests.conftest import GatewayFactory, stream
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, ToolUse
from tests.fakes.openai import Call, FakeOpenAI
from tests.fakes.openai import Reply as OReply

Client = TestClient[Any, Any]


async def test_sequential_tools_on_the_messages_api(gateway: Client, fake: FakeAnthropic) -> None:
    # One tool round, then the wrap-up call without tools (tool_choice none, no flag).
    fake.add(Reply([ToolUse("echo", {"text": "a"})]), Reply([Text("Done.")]))
    events = await stream(gateway, query="q", parallel_tools=False, max_turns=1)
    assert events[-1]["type"] == "final", events[-1]
    first, wrap_up = fake.requests
    assert first["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert wrap_up["tool_choice"] == {"type": "none"}


async def test_parallel_by_default(gateway: Client, fake: FakeAnthropic) -> None:
    fake.add(Reply([Text("Hi.")]))
    await stream(gateway, query="q")
    assert fake.requests[0]["tool_choice"] == {"type": "auto"}


async def test_the_fake_refuses_the_flag_where_the_api_does(
    gateway: Client, fake: FakeAnthropic, fake_server: TestServer
) -> None:
    body = {
        "model": "claude-test-model", "max_tokens": 10,
        "messages": [{"role": "user", "content": "q"}],
        "tools": [{"name": "t", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "none", "disable_parallel_tool_use": True},
    }  # fmt: skip
    fake.add(Reply([Text("x")]))
    async with gateway.session.post(fake_server.make_url("/v1/messages"), json=body) as answer:
        assert answer.status == 400
        assert "disable_parallel_tool_use" in (await answer.json())["error"]["message"]


@pytest.mark.parametrize("value", ["no", 0, None])
async def test_parallel_tools_must_be_a_boolean(gateway: Client, value: Any) -> None:
    response = await gateway.post("/api/stream", json={"query": "q", "parallel_tools": value})
    assert response.status == 400
    assert "parallel_tools" in await response.text()


async def test_as_a_get_parameter(gateway: Client, fake: FakeAnthropic) -> None:
    bad = await gateway.get("/api/stream", params={"query": "q", "parallel_tools": "maybe"})
    assert bad.status == 400
    fake.add(Reply([Text("Hi.")]))
    good = await gateway.get("/api/stream", params={"query": "q", "parallel_tools": "false"})
    assert good.status == 200
    await good.read()
    assert fake.requests[0]["tool_choice"]["disable_parallel_tool_use"] is True


async def test_in_the_openapi_document(gateway: Client) -> None:
    document = await (await gateway.get("/openapi.json")).json()
    body = document["components"]["schemas"]["RunBody"]["properties"]["parallel_tools"]
    assert body["type"] == "boolean" and body["default"] is True


@pytest.fixture
def fake_openai() -> FakeOpenAI:
    return FakeOpenAI()


@pytest.fixture
async def openai_server(fake_openai: FakeOpenAI, aiohttp_server: AiohttpServer) -> TestServer:
    return await aiohttp_server(fake_openai.app())


async def test_sequential_tools_on_chat_completions(
    make_gateway: GatewayFactory, fake_openai: FakeOpenAI, openai_server: TestServer
) -> None:
    client = await make_gateway(
        gateway_upstream="openai", openai_base_url=str(openai_server.make_url("/v1")),
        openai_api_key=fake_openai.api_key, openai_model="gpt-test",
    )  # fmt: skip
    fake_openai.add(OReply(calls=[Call("echo", {"text": "a"})]), OReply(text="Done."))
    events = await stream(client, query="q", parallel_tools=False)
    assert events[-1]["type"] == "final", events[-1]
    assert not fake_openai.rejected
    assert all(r["parallel_tool_calls"] is False for r in fake_openai.requests)
    fake_openai.add(OReply(text="Hi."))
    await stream(client, query="q")
    assert "parallel_tool_calls" not in fake_openai.requests[-1]
