"""The lease and its fencing token, against a redis-server of the test's own: a worker that
lost its run (its lease lapsed, another took the run) has its writes refused, and a
checkpoint rebuilds the request and the state it was taken from."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as redis

from gateway import events
from gateway.runs.durable import Claimed, Durability, decode, encode, turn_ended_run
from gateway.runs.loop import RunState
from gateway.runs.run import RunRequest
from gateway.store.eventlog import EventLog
from gateway.store.redis.runs import RedisStore
from tests.procs.redis import RedisServer, redis_server

pytestmark = pytest.mark.redis


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[RedisServer]:
    async with redis_server(tmp_path) as started:
        yield started


async def open_store(server: RedisServer, controls: list[tuple[str, str]]) -> RedisStore:
    store = RedisStore(server.url, prefix="f:", run_ttl_s=60, max_events=1000)
    await store.open(lambda kind, run_id: controls.append((kind, run_id)))
    return store


def a_state() -> tuple[RunRequest, RunState]:
    request = RunRequest([{"role": "user", "content": "q"}], tools=frozenset({"b", "a"}))
    state = RunState("run_1", "sess_1", list(request.messages), turns=1, tool_calls=2)
    state.messages.append({"role": "assistant", "content": [{"type": "text", "text": "x"}]})
    state.last_calls, state.wrap_up = ("a:{}",), "max_turns"
    return request, state


def test_a_checkpoint_rebuilds_request_and_state() -> None:
    request, state = a_state()
    back = decode(encode(request, "stream", state, 7))
    assert back.request == request and back.endpoint == "stream" and back.seq == 7
    assert back.state.resumed and back.state.current is None
    assert back.state.messages == state.messages and back.state.last_calls == ("a:{}",)
    assert (back.state.turns, back.state.tool_calls, back.state.wrap_up) == (1, 2, "max_turns")
    assert turn_ended_run(back.state, max_turns=10)  # an answer was last: only `final` is owed
    back.state.messages.append({"role": "user", "content": []})
    assert not turn_ended_run(back.state, max_turns=10)


async def test_a_stale_owner_is_refused_and_told(server: RedisServer) -> None:
    a_controls: list[tuple[str, str]] = []
    a, b = await open_store(server, a_controls), await open_store(server, [])
    claims: list[Claimed] = []
    lost: list[str] = []
    a_leases = Durability(a.leases(), 0.6, a.errors, claims.append, lost.append)
    request, state = a_state()
    log = EventLog("run_1")
    a.mirror("run_1", "sess_1", log)
    assert await a_leases.begin("run_1", encode(request, "stream", state, 0)) == 1
    log.append(events.warning("x", "before", 0))
    await a_leases.close()  # A stops renewing (paused, say): its lease lapses
    b_leases = Durability(b.leases(), 0.6, b.errors, claims.append, lost.append)
    try:
        async with asyncio.timeout(5):
            while not claims:
                await asyncio.sleep(0.02)
        assert claims[0].run_id == "run_1" and claims[0].token == 2
        assert claims[0].checkpoint.state.messages == state.messages
        log.append(events.warning("x", "after", 0))  # A still thinks it owns the run
        async with asyncio.timeout(5):
            while ("lost", "run_1") not in a_controls:
                await asyncio.sleep(0.02)
        client = redis.Redis.from_url(server.url)
        entries: Any = await client.xrange("f:run:run_1:events")
        await client.aclose()
        assert [fields[b"f"].count(b"before") for _, fields in entries] == [1]
    finally:
        await b_leases.close()
        await a.close()
        await b.close()
