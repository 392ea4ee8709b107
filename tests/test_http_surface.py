"""The HTTP surface: validation before any SSE header, JSON errors, ids, auth, tools, health."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.conftest import read_events
from tests.fakes.anthropic import FakeAnthropic, Reply, Text

Client = TestClient[Any, Any]


async def error_of(response: Any, status: int) -> dict[str, Any]:
    assert response.status == status, await response.text()
    assert response.headers["Content-Type"].startswith("application/json")
    assert response.headers["x-request-id"]
    body = await response.json()
    assert set(body["error"]) == {"code", "message", "details", "request_id"}
    return dict(body["error"])


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({}, "query is required"),
        ({"query": "   "}, "query is required"),
        ({"query": 42}, "query"),
        ({"query": "x", "max_turns": "5"}, "max_turns"),
        ({"query": "x", "max_turns": 0}, "max_turns"),
        ({"query": "x", "thinking": 100}, "at least 1024"),
        ({"query": "x", "tools": ["echo", "rm_rf"]}, "Unknown tool names: rm_rf"),
        ({"query": "x", "sessionId": "../../etc"}, "sessionId"),
        ({"messages": [{"role": "assistant", "content": "hi"}]}, "role: must be 'user'"),
        ({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]},
         "roles alternate"),
        ({"messages": [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]}]},
         "answers no unanswered tool_use"),
        ({"messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {}}]},
            {"role": "user", "content": "no results"}]}, "no tool_result for tool_use"),
    ],
)  # fmt: skip
async def test_bad_input_is_400_before_any_stream(
    gateway: Client, fake: FakeAnthropic, body: dict[str, Any], needle: str
) -> None:
    for path in ("/api/stream", "/api/research"):
        error = await error_of(await gateway.post(path, json=body), 400)
        assert error["code"] == "VALIDATION_ERROR" and needle in error["message"]
    assert fake.requests == []


async def test_bad_json_and_wrong_shape(gateway: Client) -> None:
    response = await gateway.post(
        "/api/stream", data=b"{nope", headers={"Content-Type": "application/json"}
    )
    assert "not valid JSON" in (await error_of(response, 400))["message"]
    response = await gateway.post("/api/stream", json=["query"])
    assert "JSON object" in (await error_of(response, 400))["message"]


async def test_get_stream_validates_query_params(gateway: Client, fake: FakeAnthropic) -> None:
    error = await error_of(await gateway.get("/api/stream?max_turns=lots&query=x"), 400)
    assert "max_turns" in error["message"]
    error = await error_of(await gateway.get("/api/stream"), 400)
    assert "query is required" in error["message"]
    fake.add(Reply([Text("via GET")]))
    response = await gateway.get("/api/stream?query=hello&max_turns=2&tools=echo")
    events = await read_events(response)
    assert events[2]["max_turns"] == 2 and events[-1]["result"] == "via GET"
    assert [t["name"] for t in fake.requests[0]["tools"]] == ["echo"]


async def test_oversized_body_is_413(make_gateway: Any) -> None:
    client = await make_gateway(gateway_max_body_bytes=2048)
    error = await error_of(await client.post("/api/stream", json={"query": "x" * 5000}), 413)
    assert error["code"] == "VALIDATION_ERROR" and "2048" in error["message"]


async def test_wrong_method_is_405_json(gateway: Client) -> None:
    error = await error_of(await gateway.put("/api/stream", json={"query": "x"}), 405)
    assert error["code"] == "VALIDATION_ERROR"
    error = await error_of(await gateway.get("/api/nothing-here"), 404)
    assert error["code"] == "NOT_FOUND"


async def test_sse_headers_and_request_id_echo(gateway: Client, fake: FakeAnthropic) -> None:
    fake.add(Reply([Text("hi")]))
    response = await gateway.post(
        "/api/stream", json={"query": "x"}, headers={"x-request-id": "req-123"}
    )
    assert response.headers["Content-Type"] == "text/event-stream"
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.headers["X-Accel-Buffering"] == "no"
    assert response.headers["x-request-id"] == "req-123"
    assert "Content-Encoding" not in response.headers
    raw = await response.read()
    first = raw.split(b"\n\n")[0].split(b"\n")
    assert first[0] == b"id: 1" and first[1].startswith(b"data: {") and len(first) == 2
    assert b"event:" not in raw
    assert (await gateway.get("/health")).headers["x-request-id"]


async def test_api_keys_guard_the_api(make_gateway: Any, fake: FakeAnthropic) -> None:
    client = await make_gateway(gateway_api_keys="k1,k2")
    error = await error_of(await client.post("/api/stream", json={"query": "x"}), 401)
    assert error["code"] == "AUTHENTICATION_ERROR"
    bad = {"Authorization": "Bearer nope"}
    await error_of(await client.get("/api/tools", headers=bad), 401)
    tools = await client.get("/api/tools", headers={"Authorization": "Bearer k2"})
    assert tools.status == 200
    assert (await client.get("/health")).status == 200  # not under /api/


async def test_tools_endpoint(gateway: Client) -> None:
    body = await (await gateway.get("/api/tools")).json()
    names = [t["name"] for t in body["tools"]]
    assert names == ["echo", "sleep", "fail", "crash", "big"]
    echo = body["tools"][0]
    assert echo["description"] == "Echo the text back."
    assert echo["input_schema"]["properties"]["text"]["description"] == "Text to echo back."


async def test_health_reports_upstream_and_degrades(make_gateway: Any, fake: FakeAnthropic) -> None:
    client = await make_gateway()
    body = await (await client.get("/health")).json()
    assert body["ok"] is True and body["status"] == "healthy"
    assert body["upstream"] == "anthropic" and body["model"] == "claude-test-model"
    assert body["tools"] == {"count": 5, "backends": {"test": "local"}}
    for _ in range(3):
        fake.add(Reply(status=401, error_type="authentication_error"))
        await read_events(await client.post("/api/stream", json={"query": "x"}))
    response = await client.get("/health")
    assert response.status == 503
    assert (await response.json())["status"] == "degraded"
    fake.add(Reply([Text("fine again")]))
    await read_events(await client.post("/api/stream", json={"query": "x"}))
    assert (await client.get("/health")).status == 200
