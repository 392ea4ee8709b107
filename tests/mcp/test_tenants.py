"""`/mcp` for keys made through the admin API: each `initialize` and tool call is admitted
as a run start is, under the calling key's own limits and budgets (not the configured
ones); a revoked key gets 401 and its sessions end."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient

from gateway.http import keys
from gateway.http.mcp_sessions import SESSIONS
from tests.conftest import GatewayFactory
from tests.fakes.anthropic import FakeAnthropic, Reply, Text
from tests.fakes.tools import Sleep
from tests.mcp.test_sessions import INIT, PING
from tests.test_access_tenants import ADMIN, admin_gateway, bearer, new_key, priced


def call(seconds: float) -> dict[str, Any]:
    arguments = {"seconds": seconds}
    return {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "sleep", "arguments": arguments}}  # fmt: skip


async def opened(client: TestClient[Any, Any], secret: str) -> dict[str, str]:
    """Headers of a new MCP session of the key."""
    answer = await client.post("/mcp", json=INIT, headers=bearer(secret))
    assert answer.status == 200 and "result" in await answer.json()
    return {**bearer(secret), "Mcp-Session-Id": answer.headers["Mcp-Session-Id"]}


async def refusal(client: TestClient[Any, Any], session: dict[str, str]) -> Any:
    """The `details.limit` of a refused tool call, None for one that ran."""
    answer = await (await client.post("/mcp", json=call(0), headers=session)).json()
    if "result" in answer:
        assert answer["result"]["isError"] is False
        return None
    assert answer["error"]["code"] == -32000
    assert answer["error"]["data"]["code"] == "RATE_LIMIT_ERROR"
    return answer["error"]["data"]["details"]["limit"]


async def test_a_keys_own_limits_hold_on_mcp(
    make_gateway: GatewayFactory, sleep_tool: Sleep, tmp_path: Path
) -> None:
    client = await admin_gateway(make_gateway, tmp_path)  # no configured limits at all
    one = await new_key(client, name="one", limits={"concurrent_runs": 1, "runs_per_minute": 3})
    many = await new_key(client, name="many")
    session = await opened(client, one["secret"])  # one start of three
    slow = asyncio.create_task(client.post("/mcp", json=call(0.5), headers=session))
    while not sleep_tool.started:  # the slow call holds the key's one slot
        await asyncio.sleep(0.01)
    assert await refusal(client, session) == "concurrent"
    assert (await (await slow).json())["result"]["isError"] is False  # two of three
    assert await refusal(client, session) is None  # three
    assert await refusal(client, session) == "per_minute"
    over = await client.post("/mcp", json=INIT, headers=bearer(one["secret"]))
    assert (await over.json())["error"]["data"]["details"]["limit"] == "per_minute"
    assert "Mcp-Session-Id" not in over.headers
    others = await opened(client, many["secret"])  # the configured limits: none
    running = [client.post("/mcp", json=call(0.2), headers=others) for _ in range(5)]
    answers = [await r.json() for r in await asyncio.gather(*running)]
    assert all(a["result"]["isError"] is False for a in answers)


async def test_a_keys_budgets_hold_on_mcp(
    make_gateway: GatewayFactory, fake: FakeAnthropic, tmp_path: Path
) -> None:
    client = await admin_gateway(make_gateway, tmp_path, gateway_prices_file=priced(tmp_path))
    thrifty = await new_key(client, name="thrifty", limits={"daily_usd": 0.05})
    wordy = await new_key(client, name="wordy", limits={"daily_tokens": 50})
    sessions = [await opened(client, made["secret"]) for made in (thrifty, wordy)]
    for made, session in zip((thrifty, wordy), sessions, strict=True):
        assert await refusal(client, session) is None
        fake.add(Reply([Text("hi")], input_tokens=100, output_tokens=5))  # 105 tokens, $0.11
        ran = await client.post(
            "/api/research", json={"query": "x"}, headers=bearer(made["secret"])
        )
        assert ran.status == 200
    await client.app[keys.SPEND].settled()
    await client.app[keys.LIMITS].settled()
    assert [await refusal(client, s) for s in sessions] == ["daily_usd", "daily_tokens"]


async def test_a_revoked_key_gets_401_on_mcp_and_its_sessions_end(
    make_gateway: GatewayFactory, tmp_path: Path
) -> None:
    client = await admin_gateway(make_gateway, tmp_path)
    leaked = await new_key(client, name="leaked")
    kept = await new_key(client, name="kept")
    session, other = [await opened(client, made["secret"]) for made in (leaked, kept)]
    assert await refusal(client, session) is None
    sessions = client.app[SESSIONS]
    assert sessions.count("leaked") == 1
    revoked = await client.delete(f"/api/admin/keys/{leaked['key_id']}", headers=ADMIN)
    assert revoked.status == 200
    assert sessions.count("leaked") == 0  # at once on this worker (elsewhere: its poll)
    for message in (PING, call(0), INIT):
        assert (await client.post("/mcp", json=message, headers=session)).status == 401
    assert (await client.delete("/mcp", headers=session)).status == 401
    assert (await (await client.post("/mcp", json=PING, headers=other)).json())["result"] == {}
