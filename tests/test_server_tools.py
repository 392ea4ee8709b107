"""The API's own tools (web search, web fetch) through the gateway: offered in place of the
local web_search, streamed as tool_call phases with `server: true`, sent back verbatim, and
their citations relayed and folded."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry
from pytest_aiohttp import AiohttpClient

from gateway.http.app import create_app
from gateway.ops.metrics import Metrics
from tests.conftest import GatewayFactory, settings_for, stream, tool_results, unmarked
from tests.fakes.anthropic import (
    FakeAnthropic,
    RedactedThinking,
    Reply,
    ServerToolUse,
    Text,
    ToolUse,
)
from tests.test_wire import CITATION, SEARCH_RESULTS


async def real_gateway(
    fake_server: TestServer, aiohttp_client: AiohttpClient, **overrides: Any
) -> TestClient[Any, Any]:
    """The app with the toolset `python -m gateway` builds from these settings (offline
    SEC snapshot, offline search), not a test registry."""
    settings = settings_for(fake_server, **overrides)
    return await aiohttp_client(create_app(settings, metrics=Metrics(CollectorRegistry())))


def search_turn() -> Reply:
    return Reply(
        [
            RedactedThinking(),
            ServerToolUse("web_search", {"query": "nvidia news"}, SEARCH_RESULTS),
            Text("NVIDIA news, ", citations=[CITATION]),
        ],
        stop_reason="pause_turn",
    )


async def test_server_search_streams_and_goes_back_verbatim(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway(search_backend="anthropic")
    fake.add(search_turn(), Reply([Text("continued.")]))
    events = await stream(client, query="news about nvidia", thinking=True)
    offered = fake.requests[0]["tools"]
    assert {"type": "web_search_20260318", "name": "web_search", "max_uses": 5} in [
        unmarked(t) for t in offered
    ]
    server = [e for e in events if e["type"] == "tool_call"]
    assert {e["phase"] for e in server} == {
        "tool_start", "tool_input_delta", "tool_use", "tool_result"
    }  # fmt: skip
    assert all(e.get("server") for e in server)
    assert next(e for e in events if e["type"] == "citation")["citation"] == CITATION
    # pause_turn: the assistant turn goes back exactly as produced, redacted thinking too.
    resent = unmarked(fake.requests[1]["messages"][-1]["content"])
    assert [b["type"] for b in resent] == [
        "redacted_thinking", "server_tool_use", "web_search_tool_result", "text"
    ]  # fmt: skip
    assert resent[0] == {"type": "redacted_thinking", "data": RedactedThinking().data}
    assert resent[1]["input"] == {"query": "nvidia news"}
    assert resent[2]["content"] == SEARCH_RESULTS
    assert events[-1]["outcome"] == "completed" and events[-1]["tool_calls"] == 0


async def test_research_fills_citations(make_gateway: GatewayFactory, fake: FakeAnthropic) -> None:
    client = await make_gateway(anthropic_server_tools="web_search,web_fetch")
    fake.add(search_turn(), Reply([Text("continued.")]))
    response = await client.post("/api/research", json={"query": "news"})
    body = await response.json()
    assert body["citations"] == [CITATION]
    [call] = body["toolCalls"]
    assert call["server"] is True and call["name"] == "web_search"
    names = [t.get("name") for t in fake.requests[0]["tools"]]
    assert "web_search" in names and "web_fetch" in names


async def test_a_model_without_server_tools_is_refused(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    capabilities = fake.models["claude-test-model"]["capabilities"]
    capabilities["server_tools"] = {
        "supported": False, "code_execution": {"supported": False},
        "web_search": {"supported": False},
    }  # fmt: skip
    client = await make_gateway(search_backend="anthropic")
    response = await client.post("/api/stream", json={"query": "x"})
    assert response.status == 400
    assert "server tools" in (await response.json())["error"]["message"]


async def test_the_real_toolset_with_the_apis_web_search(
    fake_server: TestServer, fake: FakeAnthropic, aiohttp_client: AiohttpClient
) -> None:
    client = await real_gateway(fake_server, aiohttp_client, search_backend="anthropic")
    fake.add(
        Reply([ToolUse("search_sec_company_tickers", {"search_term": "NVIDIA"})]),
        Reply([Text("NVIDIA is CIK 1045810.")]),
    )
    events = await stream(client, query="nvidia's cik")
    assert fake.rejected == []
    assert events[-1]["type"] == "final", events[-1]
    tools = unmarked(fake.requests[0]["tools"])
    assert [t for t in tools if t["name"] == "web_search"] == [
        {"type": "web_search_20260318", "name": "web_search", "max_uses": 5}
    ]
    assert "search_sec_company_tickers" in [t["name"] for t in tools]
    # the count clients are told is what the model was offered, web_search once
    assert events[0]["type"] == "system_info" and events[0]["tools"] == len(tools)
    [result] = tool_results(fake.requests[1]["messages"][-1])
    assert not result.get("is_error") and "1045810" in str(result["content"])


@pytest.mark.parametrize("allowed", [["web_search"], ["web_search", "search_sec_filings"]])
async def test_the_allow_list_still_takes_web_search(
    fake_server: TestServer, fake: FakeAnthropic, aiohttp_client: AiohttpClient,
    allowed: list[str],
) -> None:  # fmt: skip
    client = await real_gateway(fake_server, aiohttp_client, search_backend="anthropic")
    fake.add(search_turn(), Reply([Text("continued.")]))
    events = await stream(client, query="news", tools=allowed)
    assert events[-1]["type"] == "final", events[-1]
    offered = unmarked(fake.requests[0]["tools"])
    assert sorted(t["name"] for t in offered) == sorted(allowed)
    assert {"type": "web_search_20260318", "name": "web_search", "max_uses": 5} in offered
