"""`/mcp`'s sessions: each key's budget apart (one key's many initializes end only its own
oldest sessions), idle ones end, and an `initialize` is admitted as a run start is."""

from __future__ import annotations

import time
from typing import Any

import httpx2
from aiohttp.test_utils import TestServer
from pytest_aiohttp import AiohttpServer

from gateway.http.mcp_sessions import SESSIONS, Sessions
from gateway.ops.metrics import Metrics
from tests.mcp.test_serve import served

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}


def test_one_key_cannot_end_another_keys_sessions() -> None:
    sessions = Sessions(per_key=3)
    bob = sessions.open("2025-06-18", "bob")
    alice = [sessions.open("2025-06-18", "alice") for _ in range(10_001)]
    assert sessions.use(bob, "bob")  # still open
    assert sessions.count("alice") == 3 and sessions.count("bob") == 1
    assert [sessions.use(s, "alice") for s in alice[-4:]] == [False, True, True, True]
    assert not sessions.use(bob, "alice")  # a session is its key's only
    assert sessions.close(bob, "bob") and not sessions.use(bob, "bob")
    assert sessions.count("bob") == 0


def test_an_idle_session_ends() -> None:
    sessions = Sessions(idle_s=0.05)
    idle = sessions.open("2025-06-18", "alice")
    time.sleep(0.1)
    assert not sessions.use(idle, "alice")
    fresh = sessions.open("2025-06-18", "alice")
    assert sessions.use(fresh, "alice") and sessions.count("alice") == 1


async def test_initialize_is_admitted_within_the_keys_limits(
    aiohttp_server: AiohttpServer, fake_server: TestServer, metrics: Metrics
) -> None:
    server = await served(
        aiohttp_server,
        fake_server,
        metrics,
        gateway_api_keys="alice:ka,bob:kb",
        gateway_rate_limit_per_min=2,
    )
    url = str(server.make_url("/mcp"))
    alice, bob = ({"Authorization": f"Bearer {key}"} for key in ("ka", "kb"))
    async with httpx2.AsyncClient() as http:
        opened: list[Any] = []
        for _ in range(2):
            answer = await http.post(url, json=INIT, headers=alice)
            assert answer.status_code == 200 and "result" in answer.json()
            opened.append(answer.headers["Mcp-Session-Id"])
        over = (await http.post(url, json=INIT, headers=alice)).json()
        assert over["error"]["code"] == -32000
        assert over["error"]["data"]["code"] == "RATE_LIMIT_ERROR"
        assert "Mcp-Session-Id" not in over  # no session opened
        assert server.app[SESSIONS].count("alice") == 2
        answer = await http.post(url, json=INIT, headers=bob)  # bob's limits are his own
        assert answer.status_code == 200
        session = {**alice, "Mcp-Session-Id": opened[0]}
        assert (await http.post(url, json=PING, headers=session)).json()["result"] == {}
