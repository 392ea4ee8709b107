"""The gateway on Google Cloud Vertex AI, against a fake that issues tokens for a
generated service account key (its `token_uri` is the fake's) and refuses bearers that
are missing or expired."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer
from pytest_aiohttp import AiohttpServer

from tests.conftest import GatewayFactory, stream, types
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, Thinking, ToolUse
from tests.fakes.vertex import FakeVertex
from tests.providers.clouds_support import bare_google, phases, vertex_settings

Client = TestClient[Any, Any]


@pytest.fixture
def vertex() -> FakeVertex:
    return FakeVertex(FakeAnthropic())


@pytest.fixture
async def vertex_server(
    vertex: FakeVertex,
    aiohttp_server: AiohttpServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> TestServer:
    bare_google(monkeypatch, tmp_path)
    server = await aiohttp_server(vertex.app())
    key = vertex.write_key(tmp_path, str(server.make_url("/token")))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))
    return server


@pytest.fixture
async def on_vertex(make_gateway: GatewayFactory, vertex_server: TestServer) -> Client:
    return await make_gateway(**vertex_settings(vertex_server, sdk_thinking="on"))


async def test_a_tool_run_with_thinking_and_streamed_tool_input(
    on_vertex: Client, vertex: FakeVertex
) -> None:
    vertex.fake.add(
        Reply(
            [
                Thinking("I should echo."),
                Text("Checking."),
                ToolUse("echo", {"text": "hi " * 10}, fragment=4),
            ]
        ),
        Reply([Text("Echoed it.")]),
    )
    events = await stream(on_vertex, query="echo")
    assert events[0]["upstream"] == "vertex"
    assert events[0]["model"] == "vertex/us-east5/claude-sonnet-5"
    assert "thinking_start" in types(events), events[-1]
    assert len(phases(events, "tool_input_delta")) >= 5
    [use] = phases(events, "tool_use")
    final = events[-1]
    assert final["outcome"] == "completed" and final["result"] == "Checking.\n\nEchoed it."
    assert final["model"] == "vertex/us-east5/claude-sonnet-5"
    first, second = vertex.accepted
    # The project came from the credentials: none was set.
    assert first["path"] == (
        "/v1/projects/fake-project/locations/us-east5/publishers/"
        "anthropic/models/claude-sonnet-5:streamRawPredict"
    )
    assert first["body"]["anthropic_version"] == "2026-10-21" and first["body"]["stream"]
    assert "model" not in first["body"]
    results = second["body"]["messages"][2]["content"]
    assert results[0]["tool_use_id"] == use["tool"]["id"]
    assert first["authorization"] == second["authorization"]  # one token, still fresh
    assert vertex.issued == 1 and not vertex.refusals and not vertex.fake.rejected


async def test_tokens_near_expiry_are_renewed_before_each_call_of_a_long_run(
    make_gateway: GatewayFactory, vertex_server: TestServer, vertex: FakeVertex
) -> None:
    """A token that lives 225 s is already within google-auth's refresh window (3 min
    45 s): each call gets a new one, and the fake lets each expire when the next is out."""
    vertex.token_lifetime_s = 225
    client = await make_gateway(**vertex_settings(vertex_server))
    vertex.fake.add(
        Reply([ToolUse("echo", {"text": "1"})]),
        Reply([ToolUse("echo", {"text": "2"})]),
        Reply([Text("Three calls.")]),
    )
    events = await stream(client, query="x")
    assert events[-1]["outcome"] == "completed", events[-1]
    bearers = [a["authorization"] for a in vertex.accepted]
    assert len(set(bearers)) == 3 and vertex.issued == 3


async def test_a_token_the_service_refuses_is_renewed_and_the_call_retried(
    make_gateway: GatewayFactory, vertex_server: TestServer, vertex: FakeVertex
) -> None:
    client = await make_gateway(**vertex_settings(vertex_server))
    vertex.fake.add(Reply([Text("First.")]), Reply([Text("Second.")]))
    assert (await stream(client, query="x"))[-1]["outcome"] == "completed"
    vertex.expire_tokens()  # revoked early
    events = await stream(client, query="y")
    assert events[-1]["outcome"] == "completed", events[-1]
    [retry] = [e for e in events if e["type"] == "warning"]
    assert retry["error_code"] == "AUTHENTICATION_ERROR"
    assert vertex.issued == 2 and [r[0] for r in vertex.refusals] == [401]


async def test_the_fake_refuses_a_missing_or_unknown_bearer(vertex_server: TestServer) -> None:
    url = vertex_server.make_url(
        "/v1/projects/fake-project/locations/us-east5/publishers/anthropic/models/"
        "claude-sonnet-5:streamRawPredict"
    )
    async with aiohttp.ClientSession() as session:
        for headers in ({}, {"Authorization": "Bearer ya29.made-up"}):
            async with session.post(url, json={}, headers=headers) as response:
                body = await response.json()
                assert response.status == 401
                assert body["error"]["status"] == "UNAUTHENTICATED"


@pytest.mark.parametrize(
    ("status", "kind", "code", "retried"),
    [
        (429, "RESOURCE_EXHAUSTED", "RATE_LIMIT_ERROR", True),
        (503, "UNAVAILABLE", "NETWORK_ERROR", True),
        (403, "PERMISSION_DENIED", "PERMISSION_ERROR", False),
        (529, "overloaded_error", "OVERLOADED_ERROR", True),
        (400, "invalid_request_error", "VALIDATION_ERROR", False),
    ],
)
async def test_google_and_model_errors_map_to_codes_and_retry_rules(
    make_gateway: GatewayFactory,
    vertex_server: TestServer,
    vertex: FakeVertex,
    status: int,
    kind: str,
    code: str,
    retried: bool,
) -> None:
    client = await make_gateway(**vertex_settings(vertex_server, gateway_upstream_max_retries=1))
    vertex.fake.add(Reply(status=status, error_type=kind), Reply(status=status, error_type=kind))
    events = await stream(client, query="x")
    assert events[-1]["type"] == "error"
    error = events[-1]["error"]
    assert error["code"] == code and error["message"] == "scripted failure"
    assert len(vertex.fake.requests) == (2 if retried else 1)


async def test_the_project_setting_wins_over_the_credentials(
    make_gateway: GatewayFactory, vertex_server: TestServer, vertex: FakeVertex
) -> None:
    client = await make_gateway(**vertex_settings(vertex_server, gateway_vertex_project="other"))
    events = await stream(client, query="x")
    assert events[-1]["error"]["code"] == "PERMISSION_ERROR"
    assert "projects/other" in events[-1]["error"]["message"]


async def test_the_global_region_and_a_dated_model(
    make_gateway: GatewayFactory, vertex_server: TestServer, vertex: FakeVertex
) -> None:
    vertex.region = "global"
    settings = vertex_settings(
        vertex_server,
        gateway_vertex_region="global",
        sdk_model="claude-haiku-4-5",
        sdk_max_tokens=64_000,
    )
    client = await make_gateway(**settings)
    vertex.fake.add(Reply([Text("Haiku here.")]))
    events = await stream(client, query="x", thinking=2048)
    assert events[-1]["outcome"] == "completed", events[-1]
    assert events[-1]["model"] == "vertex/global/claude-haiku-4-5@20251001"
    assert vertex.accepted[0]["path"].endswith(
        "/locations/global/publishers/anthropic/models/claude-haiku-4-5@20251001:streamRawPredict"
    )


async def test_a_fallback_from_anthropic_to_vertex_and_its_regional_price(
    make_gateway: GatewayFactory,
    vertex_server: TestServer,
    vertex: FakeVertex,
    fake: FakeAnthropic,
) -> None:
    settings = vertex_settings(vertex_server, gateway_upstream="anthropic")
    client = await make_gateway(
        **settings, gateway_fallback_upstreams="vertex", gateway_upstream_max_retries=0
    )
    fake.add(
        Reply([ToolUse("echo", {"text": "1"})]),
        Reply(status=529, error_type="overloaded_error"),
    )
    vertex.fake.add(Reply([Text("Answered on Vertex.")], input_tokens=1000, output_tokens=100))
    events = await stream(client, query="x")
    final = events[-1]
    assert final["outcome"] == "completed" and final["model"] == "vertex/us-east5/claude-sonnet-5"
    assert [e["upstream"] for e in events if e["type"] == "turn_complete"] == [
        "anthropic",
        "vertex",
    ]
    [accepted] = vertex.accepted
    tool_id = next(e["tool"]["id"] for e in events if e.get("phase") == "tool_use")
    assert accepted["body"]["messages"][2]["content"][0]["tool_use_id"] == tool_id
    # The first call at Anthropic's price, the second at us-east5's: 10 % more.
    anthropic_cost = (10 * 2.0 + 5 * 10.0) / 1e6
    vertex_cost = (1000 * 2.2 + 100 * 11.0) / 1e6
    assert final["total_cost_usd"] == pytest.approx(anthropic_cost + vertex_cost)


async def test_an_error_event_mid_stream_ends_the_run(
    on_vertex: Client, vertex: FakeVertex
) -> None:
    vertex.fake.add(Reply([Text("Half an answer that goes on")], error_after=5))
    events = await stream(on_vertex, query="x")
    assert "delta" in types(events) and events[-1]["type"] == "error"
    assert events[-1]["error"]["code"] == "OVERLOADED_ERROR"
