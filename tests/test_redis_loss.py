"""Redis lost mid-run, on a real redis-server stopped under two gateways: a reader on the
other process gets an `error` event (never a bare end of stream), /health says degraded,
and a finished run read past its end closes at once."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.store.redis import runs
from tests.conftest import GatewayFactory, iter_events, read_events, stream
from tests.fakes.anthropic import FakeAnthropic, Reply, Text
from tests.procs.redis import RedisServer, redis_server

pytestmark = pytest.mark.redis

Client = TestClient[Any, Any]


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[RedisServer]:
    async with redis_server(tmp_path) as running:
        yield running


async def pair(make_gateway: GatewayFactory, server: RedisServer) -> tuple[Client, Client]:
    settings = {"redis_url": server.url, "redis_key_prefix": f"t{uuid.uuid4().hex[:8]}:"}
    return await make_gateway(**settings), await make_gateway(**settings)


async def test_a_reader_elsewhere_gets_an_error_when_redis_goes(
    make_gateway: GatewayFactory, fake: FakeAnthropic, server: RedisServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setattr(runs, "LOST_AFTER_S", 0.5)
    a, b = await pair(make_gateway, server)
    fake.add(Reply([Text("word " * 400, chunk=5)], delay_s=0.01))
    owner = await a.post("/api/stream", json={"query": "x"})
    run_id = owner.headers["x-run-id"]
    await asyncio.sleep(0.3)  # mirrored meanwhile
    follower = await b.get(f"/api/stream/{run_id}")
    assert follower.status == 200
    seen: list[dict[str, Any]] = []
    async with asyncio.timeout(15):
        async for event in iter_events(follower):
            seen.append(event)
            if len(seen) == 3:
                await server.stop()
    assert seen[-1]["type"] == "error", [e["type"] for e in seen[-3:]]
    assert seen[-1]["error"]["code"] == "NETWORK_ERROR"
    health = await (await b.get("/health")).json()
    assert health["status"] == "degraded"
    owned = await read_events(owner)  # the owner's own reader is unaffected
    assert owned[-1]["type"] == "final" and owned[-1]["outcome"] == "completed"


async def test_after_past_the_end_closes_at_once(
    make_gateway: GatewayFactory, fake: FakeAnthropic, server: RedisServer
) -> None:
    a, b = await pair(make_gateway, server)
    fake.add(Reply([Text("done")]))
    events = await stream(a, query="x")
    run_id, last = events[-1]["run_id"], events[-1]["seq"]
    await asyncio.sleep(0.3)  # mirrored
    for client in (a, b):  # in memory on A, from Redis on B
        async with asyncio.timeout(2):
            response = await client.get(f"/api/stream/{run_id}?after={last}")
            assert response.status == 200 and await read_events(response) == []
            past = await client.get(f"/api/stream/{run_id}?after={last + 5}")
            assert past.status == 400  # a cursor past the end is a mistake (PROTOCOL)
            assert (await past.json())["error"]["details"] == {"last_seq": last}
