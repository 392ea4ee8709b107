"""MCP servers' tools in runs, beyond the time server: every content shape mapped to
`tool_result` blocks, `isError`, `notifications/tools/list_changed`, a server that never
starts, Streamable HTTP with a bearer token (another gateway's /mcp), and the setting."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestServer
from pytest_aiohttp import AiohttpServer

from gateway.http.app import create_app
from gateway.ops.metrics import Metrics
from tests.conftest import GatewayFactory, settings_for, stream, tool_results, types
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, ToolUse
from tests.mcp.shapes_server import DOT
from tests.mcp.test_time_server import until_state
from tools.base import ToolContext
from tools.mcp.config import parse_servers
from tools.registry import ToolRegistry

SHAPES = [{"name": "shapes", "command": sys.executable, "args": ["-m", "tests.mcp.shapes_server"],
           "cwd": str(Path(__file__).resolve().parents[2])}]  # fmt: skip


def servers(value: Any) -> str:
    return orjson.dumps(value).decode()


async def test_content_shapes_and_errors_reach_the_model(
    make_gateway: GatewayFactory, fake: FakeAnthropic, metrics: Metrics
) -> None:
    client = await make_gateway(gateway_mcp_servers=servers(SHAPES), gateway_tool_timeout_s=10.0)
    fake.add(
        Reply([ToolUse("shapes__picture", {}), ToolUse("shapes__broken", {})]),
        Reply([Text("A red dot; the other tool failed.")]),
    )
    events = await stream(client, query="Show me", sessionId="shapes-session")
    assert types(events)[-1] == "final"
    picture, broken = tool_results(fake.requests[1]["messages"][-1])
    assert picture["content"] == [
        {"type": "text", "text": "a red dot"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": DOT}},
        {"type": "text", "text": "[resource file:///dot.txt]\n1x1 pixels"},
    ]
    assert broken == {"type": "tool_result", "tool_use_id": broken["tool_use_id"],
                      "content": "the disk is on fire", "is_error": True}  # fmt: skip
    preview = next(e for e in events if e.get("phase") == "tool_result")["preview"]
    assert preview.startswith("a red dot")
    errors = {"server": "shapes", "tool": "broken", "outcome": "error"}
    assert metrics.registry.get_sample_value("sdk_mcp_calls_total", errors) == 1
    # The session's history, images included, is one the next run can send again.
    fake.add(Reply([Text("Still a red dot.")]))
    again = await stream(client, query="And now?", sessionId="shapes-session")
    assert types(again)[-1] == "final"
    kept, _ = tool_results(fake.requests[2]["messages"][2])
    assert kept["content"][1]["type"] == "image"


async def test_a_list_changed_notification_lists_the_tools_again(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway(gateway_mcp_servers=servers(SHAPES), gateway_tool_timeout_s=10.0)
    listed = await (await client.get("/api/tools")).json()
    assert "shapes__sprout" not in {t["name"] for t in listed["tools"]}
    fake.add(Reply([ToolUse("shapes__grow", {})]), Reply([Text("grown")]))
    await stream(client, query="grow")
    fake.add(Reply([ToolUse("shapes__sprout", {})]), Reply([Text("sprouted")]))
    for _ in range(200):  # the notification is handled on the server's own task
        listed = await (await client.get("/api/tools")).json()
        if "shapes__sprout" in {t["name"] for t in listed["tools"]}:
            break
        await asyncio.sleep(0.02)
    events = await stream(client, query="sprout")
    assert "tool_call:tool_result" in types(events)
    (result,) = tool_results(fake.requests[3]["messages"][-1])
    assert result["content"] == "sprouted"


async def test_a_server_that_never_starts_degrades_health_and_runs_go_on(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    missing = [{"name": "ghost", "command": "/nonexistent/mcp-server"}, *SHAPES]
    client = await make_gateway(
        gateway_mcp_servers=servers(missing), gateway_mcp_backoff_s=0.2,
        gateway_tool_timeout_s=10.0,
    )  # fmt: skip
    health = await (await client.get("/health")).json()
    assert health["status"] == "degraded"  # 200 all the same: runs go on
    ghost, shapes = health["mcp_servers"]
    assert ghost["state"] == "down" and ghost["last_error"] and ghost["tools"] == []
    assert shapes["state"] == "up"
    fake.add(Reply([Text("fine")]))
    events = await stream(client, query="hello")
    assert types(events)[-1] == "final"
    assert "ghost__" not in orjson.dumps(fake.requests[0]["tools"]).decode()


async def test_streamable_http_with_a_bearer_token_and_an_allow_list(
    make_gateway: GatewayFactory, fake: FakeAnthropic, aiohttp_server: AiohttpServer,
    fake_server: TestServer, metrics: Metrics, registry: ToolRegistry,
) -> None:  # fmt: skip
    """One gateway's research tools, used by another through its /mcp."""
    registry.timeout_s = 60.0  # the test tools' 1 s is too short for a first /mcp call
    other = create_app(settings_for(fake_server, gateway_api_keys="peer:s3cret"), metrics=metrics)
    served = await aiohttp_server(other)
    edgar = {"name": "edgar", "url": str(served.make_url("/mcp")), "bearer_token": "s3cret",
             "tools": ["search_sec_company_tickers"]}  # fmt: skip
    client = await make_gateway(gateway_mcp_servers=servers([edgar]))
    server = await until_state(client, "up")
    assert server["tools"] == ["edgar__search_sec_company_tickers"]
    assert server["transport"] == "streamable_http"
    fake.add(
        Reply([ToolUse("edgar__search_sec_company_tickers", {"search_term": "NVIDIA"})]),
        Reply([Text("NVDA")]),
    )
    await stream(client, query="NVIDIA's ticker?")
    (result,) = tool_results(fake.requests[1]["messages"][-1])
    assert not result.get("is_error"), result
    assert orjson.loads(result["content"])["matches"][0]["ticker"] == "NVDA"


def test_the_setting(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_text(servers(SHAPES))
    (config,) = parse_servers(f"@{path}")
    assert config.transport == "stdio" and config.tools is None
    (http,) = parse_servers(servers([{"name": "a-b", "url": "https://x/mcp", "bearer_token": "t",
                                      "headers": {"X-A": "1"}}]))  # fmt: skip
    assert http.http_headers() == {"X-A": "1", "Authorization": "Bearer t"}
    assert parse_servers(None) == parse_servers("  ") == ()
    wrong = [
        [{"name": "x", "command": "a", "url": "http://b"}],  # both transports
        [{"name": "x"}],  # neither
        [{"name": "a__b", "command": "a"}],  # the separator in a name
        [{"name": "x", "command": "a"}, {"name": "x", "command": "b"}],  # twice
        [{"name": "x", "url": "http://b", "env": {"A": "1"}}],  # env without a command
        [{"name": "x", "command": "a", "colour": "red"}],  # an unknown key
    ]
    for value in wrong:
        with pytest.raises(ValueError, match="GATEWAY_MCP_SERVERS"):
            parse_servers(servers(value))
    with pytest.raises(ValueError, match="cannot read"):
        parse_servers(f"@{tmp_path / 'missing.json'}")


async def test_a_snapshot_keeps_the_tools_it_was_taken_with() -> None:
    from tests.fakes.tools import Echo

    registry = ToolRegistry([Echo()])
    before = registry.snapshot()
    assert registry.snapshot() is before  # one object per state
    other = Echo()
    other.name = "mcp__echo"
    registry.replace("mcp", [other])
    assert before.names() == ["echo"] and registry.names() == ["echo", "mcp__echo"]
    assert registry.source_of("mcp__echo") == "mcp" and registry.source_of("echo") is None
    clash = Echo()
    assert registry.replace("other", [clash]) == ["echo"]  # a taken name is not taken over
    registry.replace("mcp", [])
    assert registry.names() == ["echo"]
    outcome = await before.call("echo", {"text": "hi"}, ToolContext())
    assert not outcome.is_error
