"""The re-attach cursor: past the run's last seq is a 400 before any SSE header, with the
last seq in its details; at a finished run's last seq, an empty stream that ends at once.
The same for a run in memory and for one read from Redis by another process (app)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.http import keys
from gateway.store.redis import mirror
from tests.conftest import GatewayFactory, iter_events, read_events
from tests.fakes.anthropic import FakeAnthropic, Reply, Text
from tests.procs.redis import redis_server

Client = TestClient[Any, Any]
SLOW = "word " * 200


@pytest.fixture
async def redis_url(tmp_path: Path) -> AsyncIterator[str]:
    async with redis_server(tmp_path) as server:
        yield server.url


async def finished_run(client: Client, fake: FakeAnthropic) -> tuple[str, int]:
    fake.add(Reply([Text("three words here", chunk=5)]))
    events = await read_events(await client.post("/api/stream", json={"query": "x"}))
    assert events[-1]["type"] == "final"
    return events[0]["run_id"], events[-1]["seq"]


async def assert_past_the_end(client: Client, run_id: str, after: int, last: int) -> None:
    for response in (
        await client.get(f"/api/stream/{run_id}?after={after}"),
        await client.get(f"/api/stream/{run_id}", headers={"Last-Event-ID": str(after)}),
    ):
        assert response.status == 400
        assert response.headers["Content-Type"].startswith("application/json")
        error = (await response.json())["error"]
        assert error["code"] == "VALIDATION_ERROR"
        assert error["details"] == {"last_seq": last}
        assert str(after) in error["message"]


async def assert_empty_and_closed(client: Client, run_id: str, last: int) -> None:
    response = await client.get(f"/api/stream/{run_id}?after={last}")
    assert response.status == 200
    assert response.headers["Content-Type"] == "text/event-stream"
    async with asyncio.timeout(2):  # it ends at once: no heartbeat wait, no live follow
        assert await response.read() == b""


async def test_a_cursor_past_a_finished_run_is_a_400(gateway: Client, fake: FakeAnthropic) -> None:
    run_id, last = await finished_run(gateway, fake)
    await assert_past_the_end(gateway, run_id, last + 100, last)
    await assert_past_the_end(gateway, run_id, last + 1, last)
    await assert_empty_and_closed(gateway, run_id, last)
    whole = await read_events(await gateway.get(f"/api/stream/{run_id}?after={last - 1}"))
    assert [e["seq"] for e in whole] == [last] and whole[0]["type"] == "final"


async def test_a_cursor_past_a_running_run_is_a_400(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway(gateway_resume_grace_s=5.0)
    fake.add(Reply([Text(SLOW, chunk=5)], delay_s=0.01))
    response = await client.post("/api/stream", json={"query": "x"})
    first = await anext(iter_events(response))
    run = client.app[keys.RUNS].get(first["run_id"])
    assert run is not None and not run.done
    answer = await client.get(f"/api/stream/{run.id}?after=100000")
    assert answer.status == 400
    last = (await answer.json())["error"]["details"]["last_seq"]
    assert first["seq"] <= last <= run.log.last_seq < 100000
    rest = await read_events(response)
    assert rest[-1]["type"] == "final"


async def test_a_cursor_that_is_not_a_seq_is_a_400(gateway: Client, fake: FakeAnthropic) -> None:
    run_id, _ = await finished_run(gateway, fake)
    for after in ("-1", "x", "1.5"):
        response = await gateway.get(f"/api/stream/{run_id}?after={after}")
        assert response.status == 400
        assert (await response.json())["error"]["code"] == "VALIDATION_ERROR"


@pytest.mark.redis
async def test_a_run_read_from_redis_answers_the_same(
    make_gateway: GatewayFactory, redis_url: str, fake: FakeAnthropic
) -> None:
    shared = {"redis_url": redis_url, "redis_key_prefix": "cursor:", "gateway_resume_grace_s": 5}
    owner, other = await make_gateway(**shared), await make_gateway(**shared)
    run_id, last = await finished_run(owner, fake)
    assert other.app[keys.RUNS].get(run_id) is None  # the other app knows it from Redis only
    async with asyncio.timeout(5):  # until the terminal frame is mirrored
        while (await other.get(f"/api/stream/{run_id}?after={last}")).status != 200:
            await asyncio.sleep(0.02)
    for client in (owner, other):
        await assert_past_the_end(client, run_id, last + 100, last)
        await assert_empty_and_closed(client, run_id, last)
        again = await read_events(await client.get(f"/api/stream/{run_id}?after={last - 1}"))
        assert [e["seq"] for e in again] == [last]
    unknown = await other.get("/api/stream/run_nope?after=5")
    assert unknown.status == 404


@pytest.mark.redis
async def test_a_running_run_read_from_redis_answers_the_same(
    make_gateway: GatewayFactory, redis_url: str, fake: FakeAnthropic
) -> None:
    shared = {"redis_url": redis_url, "redis_key_prefix": "cursor:", "gateway_resume_grace_s": 5}
    owner, other = await make_gateway(**shared), await make_gateway(**shared)
    fake.add(Reply([Text(SLOW, chunk=5)], delay_s=0.01))
    response = await owner.post("/api/stream", json={"query": "x"})
    seen: list[dict[str, Any]] = []
    async for event in iter_events(response):
        seen.append(event)
        if len(seen) == 5:
            break
    run_id = seen[0]["run_id"]
    answer = await other.get(f"/api/stream/{run_id}?after=100000")
    assert answer.status == 400
    assert 0 < (await answer.json())["error"]["details"]["last_seq"] < 100000
    # A cursor the owner has streamed but the mirror may not hold yet is not refused.
    follower = await other.get(f"/api/stream/{run_id}?after={seen[-1]['seq']}")
    assert follower.status == 200
    rest = await read_events(follower)
    assert rest[0]["seq"] == seen[-1]["seq"] + 1 and rest[-1]["type"] == "final"
    response.close()


@pytest.mark.redis
async def test_a_long_backlog_from_redis_is_replayed_whole(
    make_gateway: GatewayFactory, redis_url: str, fake: FakeAnthropic
) -> None:
    shared = {"redis_url": redis_url, "redis_key_prefix": "cursor:", "gateway_resume_grace_s": 5}
    owner, other = await make_gateway(**shared), await make_gateway(**shared)
    words = " ".join(f"w{n}" for n in range(3 * mirror.REPLAY_FRAMES))
    fake.add(Reply([Text(words, chunk=4)]))  # several replay windows of frames
    events = await read_events(await owner.post("/api/stream", json={"query": "x"}))
    run_id, last = events[0]["run_id"], events[-1]["seq"]
    assert last > 2 * mirror.REPLAY_FRAMES
    async with asyncio.timeout(5):  # until the terminal frame is mirrored
        while (await other.get(f"/api/stream/{run_id}?after={last}")).status != 200:
            await asyncio.sleep(0.02)
    for after in (0, 7, mirror.REPLAY_FRAMES, last - 1):
        replayed = await read_events(await other.get(f"/api/stream/{run_id}?after={after}"))
        assert replayed == events[after:], after
