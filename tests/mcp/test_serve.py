"""`/mcp`: the official Python SDK's client lists and calls every research tool through it
(offline backends, the schemas of /api/tools); keys, limits and audit as for /api/*; the
transport's edges (sessions, GET, DELETE, origins, notifications)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp.types as mcp_types
import orjson
import pytest
from aiohttp.test_utils import TestServer
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from pytest_aiohttp import AiohttpServer

from gateway.http.app import create_app
from gateway.ops.metrics import Metrics
from tests.conftest import settings_for

CALLS: dict[str, dict[str, Any]] = {
    "search_sec_company_tickers": {"search_term": "NVIDIA"},
    "search_sec_filings": {"company_identifier": "AAPL", "filing_type": "10-K", "limit": 2},
    "get_sec_filing": {"cik": "320193", "accession_number": "0000320193-24-000123",
                       "max_chars": 2000},
    "get_sec_company_facts": {"company_identifier": "NVDA", "concept": "Revenues", "limit": 2},
    "get_sec_xbrl_frames": {"concept": "Revenues", "period": "CY2023", "limit": 3},
    "search_sec_full_text": {"query": "supply chain", "limit": 2},
    "web_search": {"query": "NVIDIA revenue", "num_results": 2},
}  # fmt: skip
KEY = "mcp-test-key"


async def served(
    aiohttp_server: AiohttpServer, fake_server: TestServer, metrics: Metrics, **settings: Any
) -> TestServer:
    """A gateway with its own offline tools (not the test tools), on a real port."""
    app = create_app(settings_for(fake_server, **settings), metrics=metrics)
    return await aiohttp_server(app)


@asynccontextmanager
async def mcp_session(url: str, key: str | None = None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {key}"} if key else None
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def text_of(result: mcp_types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, mcp_types.TextContent)
    return block.text


async def test_the_sdk_client_lists_and_calls_every_tool(
    aiohttp_server: AiohttpServer, fake_server: TestServer, metrics: Metrics
) -> None:
    server = await served(aiohttp_server, fake_server, metrics)
    url = str(server.make_url("/mcp"))
    async with httpx2.AsyncClient() as http:
        offered = (await http.get(str(server.make_url("/api/tools")))).json()["tools"]
    async with mcp_session(url) as session:
        listed = (await session.list_tools()).tools
        assert [t.name for t in listed] == [t["name"] for t in offered] == list(CALLS)
        for tool, definition in zip(listed, offered, strict=True):
            assert tool.input_schema == definition["input_schema"]
            assert tool.description == definition["description"]
        results = await asyncio.gather(*(session.call_tool(n, a) for n, a in CALLS.items()))
        for name, result in zip(CALLS, results, strict=True):
            assert isinstance(result, mcp_types.CallToolResult)
            assert not result.is_error, (name, text_of(result))
            assert orjson.loads(text_of(result))  # the same JSON a run's tool_result holds
        wrong = await session.call_tool("search_sec_company_tickers", {"query": "x"})
        assert isinstance(wrong, mcp_types.CallToolResult) and wrong.is_error
        assert "search_term: Field required" in text_of(wrong)  # the model-facing message
        await session.send_ping()
        with pytest.raises(MCPError, match="Unknown tool"):
            await session.call_tool("no_such_tool", {})
    labels = {"tool": "web_search", "outcome": "success"}
    assert metrics.registry.get_sample_value("sdk_tool_invocations_total", labels) == 1


async def test_keys_limits_and_audit_as_for_the_api(
    aiohttp_server: AiohttpServer, fake_server: TestServer, metrics: Metrics, tmp_path: Path
) -> None:
    audit = tmp_path / "audit.log"
    server = await served(
        aiohttp_server, fake_server, metrics, gateway_api_keys=f"alice:{KEY}",
        gateway_rate_limit_per_min=3, gateway_audit_log=str(audit),  # initialize, 2 calls
    )  # fmt: skip
    url = str(server.make_url("/mcp"))
    async with httpx2.AsyncClient() as http:
        hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        refused = await http.post(url, json=hello)
        assert refused.status_code == 401
    async with mcp_session(url, KEY) as session:
        ticker = {"search_term": "Apple"}
        for _ in range(2):
            result = await session.call_tool("search_sec_company_tickers", ticker)
            assert isinstance(result, mcp_types.CallToolResult) and not result.is_error
        with pytest.raises(MCPError, match="over its per_minute limit") as over:
            await session.call_tool("search_sec_company_tickers", ticker)  # over 3 a minute
        assert over.value.error.data["code"] == "RATE_LIMIT_ERROR"
    await server.close()  # the audit log is written out at shutdown
    lines = [orjson.loads(line) for line in audit.read_bytes().splitlines()]
    calls = [line for line in lines if line["event"] == "tool_call"]
    assert len(calls) == 2
    assert {c["key"] for c in calls} == {"alice"} and calls[0][
        "tool"
    ] == "search_sec_company_tickers"
    assert calls[0]["input_hmac_sha256"] and calls[0]["session_id"]


async def test_the_transport_edges(
    aiohttp_server: AiohttpServer, fake_server: TestServer, metrics: Metrics
) -> None:
    server = await served(aiohttp_server, fake_server, metrics)
    url = str(server.make_url("/mcp"))
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    async with httpx2.AsyncClient() as http:
        answer = await http.post(url, json=init)
        assert answer.status_code == 200
        assert answer.json()["result"]["protocolVersion"] == "2025-06-18"  # its version kept
        session = {"Mcp-Session-Id": answer.headers["Mcp-Session-Id"]}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post(url, json=note, headers=session)).status_code == 202
        assert (await http.post(url, json=ping)).status_code == 400  # no session
        assert (await http.post(url, json=ping, headers={"Mcp-Session-Id": "x"})).status_code == 404
        assert (await http.post(url, json=ping, headers=session)).json()["result"] == {}
        unknown = await http.post(url, json={**ping, "method": "resources/list"}, headers=session)
        assert unknown.json()["error"]["code"] == mcp_types.METHOD_NOT_FOUND
        bad = await http.post(url, content=b"{", headers={"content-type": "application/json"})
        assert bad.status_code == 400 and bad.json()["error"]["code"] == mcp_types.PARSE_ERROR
        assert (await http.get(url, headers=session)).status_code == 405
        evil = {**session, "Origin": "http://evil.example.com"}
        assert (await http.post(url, json=ping, headers=evil)).status_code == 403
        local = {**session, "Origin": f"http://{server.host}:{server.port}"}  # its own page
        assert (await http.post(url, json=ping, headers=local)).status_code == 200
        assert (await http.delete(url, headers=session)).status_code == 204
        assert (await http.post(url, json=ping, headers=session)).status_code == 404  # ended


async def test_off_when_not_served(
    aiohttp_server: AiohttpServer, fake_server: TestServer, metrics: Metrics
) -> None:
    server = await served(aiohttp_server, fake_server, metrics, gateway_mcp_serve=False)
    async with httpx2.AsyncClient() as http:
        answer = await http.post(str(server.make_url("/mcp")), json={"jsonrpc": "2.0"})
    assert answer.status_code in (404, 405)
