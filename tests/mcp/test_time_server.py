"""A real third-party MCP server from PyPI (`mcp-server-time`, over stdio) in a run: the
model's call reaches it and its answer reaches the model; killed mid-run, its tool answers
`is_error`, /health says degraded with the server's state, and it comes back."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import orjson
from aiohttp.test_utils import TestClient

from gateway.ops.metrics import Metrics
from tests.conftest import GatewayFactory, iter_events, stream, tool_results, types
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, ToolUse

TIME_SERVER = [{"name": "time", "command": sys.executable, "args": ["-m", "mcp_server_time"],
                "tools": ["get_current_time"]}]  # fmt: skip
FAST = {"gateway_mcp_backoff_s": 1.0, "gateway_mcp_backoff_max_s": 1.0, "gateway_mcp_ping_s": 0.3}


async def time_gateway(make_gateway: GatewayFactory) -> TestClient[Any, Any]:
    return await make_gateway(
        gateway_mcp_servers=orjson.dumps(TIME_SERVER).decode(), gateway_tool_timeout_s=10.0,
        **FAST,
    )  # fmt: skip


def time_server_pids() -> list[int]:
    """The test process's children running mcp_server_time."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and b"mcp_server_time" in cmdline:
            found.append(int(entry.name))
    return found


async def server_state(client: TestClient[Any, Any]) -> tuple[str, dict[str, Any]]:
    health = await (await client.get("/health")).json()
    (server,) = health["mcp_servers"]
    return health["status"], server


async def until_state(client: TestClient[Any, Any], state: str) -> dict[str, Any]:
    async with asyncio.timeout(30):
        while True:
            _, server = await server_state(client)
            if server["state"] == state:
                return server
            await asyncio.sleep(0.05)


async def test_the_model_calls_it_and_reads_its_answer(
    make_gateway: GatewayFactory, fake: FakeAnthropic, metrics: Metrics
) -> None:
    client = await time_gateway(make_gateway)
    listed = await (await client.get("/api/tools")).json()
    by_name = {t["name"]: t for t in listed["tools"]}
    assert by_name["time__get_current_time"]["server"] == "time"
    assert "time__convert_time" not in by_name  # not on the allow-list
    assert by_name["echo"]["server"] is None
    assert listed["mcp_servers"][0]["state"] == "up"
    fake.add(
        Reply([ToolUse("time__get_current_time", {"timezone": "Asia/Tokyo"})]),
        Reply([Text("It is late in Tokyo.")]),
    )
    events = await stream(
        client, query="What time is it in Tokyo?", tools=["time__get_current_time"]
    )
    assert types(events)[-1] == "final"
    offered = [t["name"] for t in fake.requests[0]["tools"]]
    assert offered == ["time__get_current_time"]  # the request's allow-list named it
    (result,) = tool_results(fake.requests[1]["messages"][-1])
    assert not result.get("is_error")
    answer = orjson.loads(result["content"])
    assert answer["timezone"] == "Asia/Tokyo" and answer["datetime"].endswith("+09:00")
    labels = {"server": "time", "tool": "get_current_time", "outcome": "success"}
    assert metrics.registry.get_sample_value("sdk_mcp_calls_total", labels) == 1
    status, server = await server_state(client)
    assert status == "healthy" and server["connects"] == 1


async def test_killed_mid_run_is_an_error_then_it_comes_back(
    make_gateway: GatewayFactory, fake: FakeAnthropic, metrics: Metrics
) -> None:
    client = await time_gateway(make_gateway)
    fake.add(
        Reply([ToolUse("sleep", {"seconds": 0.5})]),
        Reply([ToolUse("time__get_current_time", {"timezone": "UTC"})]),
        Reply([Text("The time server is gone.")]),
    )
    response = await client.post("/api/stream", json={"query": "time?"})
    assert response.status == 200
    seen = []
    async for event in iter_events(response):
        seen.append(event)
        if event.get("phase") == "tool_executing" and event["tool"]["name"] == "sleep":
            (pid,) = time_server_pids()
            os.kill(pid, signal.SIGKILL)  # while the run is in its first tool round
            server = await until_state(client, "down")
            status, _ = await server_state(client)
            assert status == "degraded" and server["tools"] == [] and server["last_error"]
    assert seen[-1]["type"] == "final"
    errors = [e for e in seen if e.get("phase") == "tool_error"]
    assert [e["tool"]["name"] for e in errors] == ["time__get_current_time"]
    assert "MCP server 'time'" in errors[0]["error"]
    (result,) = tool_results(fake.requests[2]["messages"][-1])
    assert result["is_error"] is True  # and the model read it as such
    labels = {"server": "time", "tool": "get_current_time", "outcome": "error"}
    assert metrics.registry.get_sample_value("sdk_mcp_calls_total", labels) == 1

    server = await until_state(client, "up")  # reconnected after its backoff
    assert server["connects"] == 2 and server["tools"] == ["time__get_current_time"]
    status, _ = await server_state(client)
    assert status == "healthy"
    fake.add(Reply([ToolUse("time__get_current_time", {"timezone": "UTC"})]), Reply([Text("ok")]))
    events = await stream(client, query="time again?")
    assert "tool_call:tool_result" in types(events)
