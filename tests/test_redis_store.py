"""Several gateway processes share runs through Redis: two apps on one fake upstream, one
redis-server of the test's own. A run started on A is re-attached, cancelled and
continued (as a session) on B; the disconnect rule counts readers on both."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as redis
from aiohttp import web
from aiohttp.test_utils import TestClient

from gateway.http import keys
from gateway.http.app import create_app
from gateway.runs.tools import StaticToolset
from gateway.sse import parse_frames
from gateway.store.redis import mirror
from gateway.store.redis.runs import RedisStore, StoreUnavailable
from gateway.store.redis.wire import Batch
from tests.conftest import (
    GatewayFactory,
    iter_events,
    read_events,
    settings_for,
    stream,
    unmarked,
)
from tests.fakes.anthropic import FakeAnthropic, Reply, Text
from tests.procs.redis import redis_server
from tools.registry import ToolRegistry

pytestmark = pytest.mark.redis

Client = TestClient[Any, Any]
Pair = tuple[Client, Client]
SLOW = "word " * 200  # 200 deltas of 5 characters


@pytest.fixture
async def redis_url(tmp_path: Path) -> AsyncIterator[str]:
    """A redis-server of this test's own."""
    async with redis_server(tmp_path) as server:
        yield server.url


@pytest.fixture
async def shared_redis(redis_url: str) -> AsyncIterator[tuple[redis.Redis, str]]:
    """A client of the test's Redis, and a key prefix for this test."""
    client = redis.Redis.from_url(redis_url, socket_connect_timeout=1.0)
    yield client, f"rgtest:{uuid.uuid4().hex[:12]}:"
    await client.aclose()


@pytest.fixture
def make_pair(
    redis_url: str, shared_redis: tuple[redis.Redis, str], make_gateway: GatewayFactory
) -> Callable[..., Awaitable[Pair]]:
    """Two gateway processes (apps) sharing the Redis and the upstream."""
    _, prefix = shared_redis

    async def make(**overrides: Any) -> Pair:
        settings = {"redis_url": redis_url, "redis_key_prefix": prefix, **overrides}
        return await make_gateway(**settings), await make_gateway(**settings)

    return make


async def first_events(client: Client, count: int, **body: Any) -> list[dict[str, Any]]:
    """Start a stream, read `count` events, and drop the connection."""
    response = await client.post("/api/stream", json={"query": "x", **body})
    seen: list[dict[str, Any]] = []
    async for event in iter_events(response):
        seen.append(event)
        if len(seen) == count:
            break
    response.close()
    return seen


async def reattach(client: Client, run_id: str, last: int) -> list[dict[str, Any]]:
    response = await client.get(f"/api/stream/{run_id}", headers={"Last-Event-ID": str(last)})
    assert response.status == 200, await response.text()
    return await read_events(response)


def assert_whole(every: list[dict[str, Any]], outcome: str) -> None:
    assert [e["seq"] for e in every] == list(range(1, len(every) + 1))
    assert [e["type"] for e in every].count("final") == 1
    assert every[-1]["type"] == "final" and every[-1]["outcome"] == outcome


async def test_reattach_on_another_process_loses_and_repeats_nothing(
    make_pair: Callable[..., Awaitable[Pair]], fake: FakeAnthropic
) -> None:
    a, b = await make_pair(gateway_resume_grace_s=5.0)
    fake.add(Reply([Text(SLOW, chunk=5)], delay_s=0.005))
    seen = await first_events(a, 12)
    run_id = seen[0]["run_id"]
    assert b.app[keys.RUNS].get(run_id) is None  # B reads it from Redis
    every = seen + await reattach(b, run_id, seen[-1]["seq"])
    assert_whole(every, "completed")
    assert "".join(e["text"] for e in every if e["type"] == "delta") == SLOW
    after = await b.get(f"/api/stream/{run_id}?after=3")
    assert (await read_events(after))[0]["seq"] == 4


async def test_a_run_is_known_everywhere_from_its_first_event(
    make_pair: Callable[..., Awaitable[Pair]], fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mirror, "FLUSH_INTERVAL_S", 0.3)  # the record must not wait for it
    a, b = await make_pair()
    fake.add(Reply([Text(SLOW, chunk=5)], delay_s=0.002))
    response = await a.post("/api/stream", json={"query": "x"})
    first = parse_frames(await response.content.readuntil(b"\n\n"))
    follower = await b.get(f"/api/stream/{first[0]['run_id']}", headers={"Last-Event-ID": "1"})
    assert follower.status == 200
    assert first + await read_events(follower) == first + (await read_events(response))


async def test_cancel_sent_to_another_process(
    make_pair: Callable[..., Awaitable[Pair]], fake: FakeAnthropic
) -> None:
    a, b = await make_pair()
    fake.add(Reply([Text(SLOW, chunk=5)], delay_s=0.02))
    response = await a.post("/api/stream", json={"query": "x"})
    collected: list[dict[str, Any]] = []
    async for event in iter_events(response):
        collected.append(event)
        if event["type"] == "delta" and len(collected) == 5:
            answer = await b.post(f"/api/runs/{event['run_id']}/cancel")
            assert (await answer.json())["cancelled"] is True
    assert_whole(collected, "cancelled")
    await asyncio.wait_for(fake.disconnected.wait(), 2)
    run_id = collected[0]["run_id"]
    assert_whole(await reattach(b, run_id, 0), "cancelled")  # the terminal event is in Redis
    again = await b.post(f"/api/runs/{run_id}/cancel")
    assert (await again.json())["cancelled"] is False


async def test_reader_moving_to_another_process_keeps_the_run(
    make_pair: Callable[..., Awaitable[Pair]], fake: FakeAnthropic
) -> None:
    a, b = await make_pair(gateway_resume_grace_s=0.2)  # the run lasts several graces
    fake.add(Reply([Text(SLOW, chunk=5)], delay_s=0.005))
    seen = await first_events(a, 5)
    every = seen + await reattach(b, seen[0]["run_id"], seen[-1]["seq"])
    assert_whole(every, "completed")
    assert fake.disconnects == 0


async def test_nobody_attached_anywhere_cancels_after_grace(
    make_pair: Callable[..., Awaitable[Pair]], fake: FakeAnthropic
) -> None:
    a, b = await make_pair(gateway_resume_grace_s=0.3)
    fake.add(Reply([Text(SLOW, chunk=5)], delay_s=0.02))
    seen = await first_events(a, 3)
    run_id = seen[0]["run_id"]
    response = await b.get(f"/api/stream/{run_id}", headers={"Last-Event-ID": "3"})
    async for event in iter_events(response):
        if event["seq"] == 8:
            break
    response.close()  # now nobody reads it, on either process
    await asyncio.wait_for(fake.disconnected.wait(), 3)
    assert_whole(await reattach(b, run_id, 0), "client_disconnected")


async def test_session_continues_on_another_process(
    make_pair: Callable[..., Awaitable[Pair]], fake: FakeAnthropic
) -> None:
    a, b = await make_pair()
    fake.add(Reply([Text("First answer.")]), Reply([Text("Second answer.")]))
    await stream(a, query="one", sessionId="sess-shared")
    second = await stream(b, query="two", sessionId="sess-shared")
    assert second[-1]["session_id"] == "sess-shared"
    assert unmarked(fake.requests[1]["messages"]) == [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": [{"type": "text", "text": "First answer."}]},
        {"role": "user", "content": [{"type": "text", "text": "two"}]},  # the breakpoint's form
    ]


async def test_unknown_run_is_404_on_every_process(
    make_pair: Callable[..., Awaitable[Pair]],
) -> None:
    _, b = await make_pair()
    for response in (
        await b.get("/api/stream/run_nope"),
        await b.post("/api/runs/run_nope/cancel"),
    ):
        assert response.status == 404
        assert (await response.json())["error"]["code"] == "NOT_FOUND"


async def test_log_is_mirrored_in_batches_and_expires(
    make_pair: Callable[..., Awaitable[Pair]],
    shared_redis: tuple[redis.Redis, str],
    fake: FakeAnthropic,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client, prefix = shared_redis
    writes = count_writes(monkeypatch)
    a, _ = await make_pair(gateway_run_ttl_s=120)
    fake.add(Reply([Text("x" * 3000, chunk=2)]))  # 1,500 deltas as fast as they come
    events = await stream(a, query="x")
    run_id, last = events[-1]["run_id"], events[-1]["seq"]
    await mirrored(client, prefix, run_id)
    assert writes["writes"] < last / 20  # batches, not a round trip per event
    entries: Any = await client.xrange(f"{prefix}run:{run_id}:events")
    assert [entry_id for entry_id, _ in entries] == [f"{n}-0".encode() for n in range(1, last + 1)]
    assert [fields.get(b"end") for _, fields in entries][-2:] == [None, b"1"]
    record: Any = await client.hgetall(f"{prefix}run:{run_id}")
    shared = a.app[keys.RUNS].shared
    assert record[b"status"] == b"finished" and shared is not None
    assert record[b"owner"].decode() == shared.worker_id and b"readers" not in record
    for key in (f"{prefix}run:{run_id}", f"{prefix}run:{run_id}:events"):
        assert 0 < await client.ttl(key) <= 120


async def stream_with_outage(
    client: Client, redis_state: dict[str, int], down_at: int, up_at: int | None
) -> list[dict[str, Any]]:
    """Stream a run to its end; Redis fails from seq `down_at` until seq `up_at`."""
    response = await client.post("/api/stream", json={"query": "x"})
    seen: list[dict[str, Any]] = []
    async for event in iter_events(response):
        seen.append(event)
        redis_state["down"] = int(
            down_at <= event["seq"] and (up_at is None or event["seq"] < up_at)
        )
    return seen


async def test_redis_failing_mid_run_keeps_the_run_and_catches_up(
    make_pair: Callable[..., Awaitable[Pair]],
    fake: FakeAnthropic,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    redis_state = count_writes(monkeypatch)
    a, b = await make_pair()
    fake.add(Reply([Text(SLOW, chunk=5)], delay_s=0.005))
    with caplog.at_level(logging.INFO, logger="gateway.store.redis.mirror"):
        events = await stream_with_outage(a, redis_state, down_at=5, up_at=100)
        assert_whole(events, "completed")
        assert await reattach(b, events[0]["run_id"], 0) == events  # Redis caught up
        await until(lambda: "writing" in caplog.text)  # once the answer is read
    assert caplog.text.count("the run goes on in memory") == 1


async def test_redis_back_after_the_run_ended_gets_the_terminal_event(
    make_pair: Callable[..., Awaitable[Pair]],
    fake: FakeAnthropic,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    redis_state = count_writes(monkeypatch)
    a, b = await make_pair()
    fake.add(Reply([Text(SLOW, chunk=5)], delay_s=0.002))
    events = await stream_with_outage(a, redis_state, down_at=5, up_at=None)
    assert_whole(events, "completed")  # the run ended in memory, Redis still down
    failed = redis_state["failed"]
    await until(lambda: redis_state["failed"] > failed)  # the mirror still tries
    redis_state["down"] = 0
    assert await reattach(b, events[0]["run_id"], 0) == events


async def test_redis_down_for_good_ends_the_run_in_memory(
    make_pair: Callable[..., Awaitable[Pair]],
    fake: FakeAnthropic,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    redis_state = count_writes(monkeypatch)
    redis_state["down"] = 1
    a, _ = await make_pair()
    fake.add(Reply([Text(SLOW, chunk=5)], delay_s=0.002))
    async with asyncio.timeout(3):
        assert_whole(await stream(a, query="x"), "completed")


async def test_unreachable_redis_fails_fast(fake_server: Any, registry: ToolRegistry) -> None:
    settings = settings_for(fake_server, redis_url="redis://:secret@127.0.0.1:1/0")
    runner = web.AppRunner(create_app(settings, toolset=StaticToolset(registry, backends={})))
    with pytest.raises(StoreUnavailable, match=r"REDIS_URL is set, but Redis at .*:\*\*\*@"):
        await runner.setup()  # what `python -m gateway` does first
    await runner.cleanup()


async def mirrored(client: redis.Redis, prefix: str, run_id: str) -> None:
    """Until the owner has written the terminal event (local readers see it first)."""
    async with asyncio.timeout(5):
        while await client.hget(f"{prefix}run:{run_id}", "status") != b"finished":
            await asyncio.sleep(0.01)


async def until(predicate: Callable[[], bool], timeout: float = 3.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.01)


def count_writes(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count the flusher's writes (`writes`); while `down` is set they fail."""
    state = {"writes": 0, "down": 0, "failed": 0}
    write = RedisStore.write

    async def counted(self: RedisStore, batches: list[Batch]) -> set[int]:
        state["writes"] += 1
        if state["down"]:
            state["failed"] += 1
            raise redis.ConnectionError("injected: Redis went away")
        return await write(self, batches)

    monkeypatch.setattr(RedisStore, "write", counted)
    return state
