"""The in-process session cache stays within its byte bound and frees what expires; a
save Redis refuses is kept here and written when Redis answers again (a real server,
stopped and started)."""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from pathlib import Path

import orjson
import pytest
import redis.asyncio as redis

from gateway.store.redis.sessions import RedisSessions
from gateway.store.sessions import MemorySessions, Message
from tests.procs.redis import redis_server


def history(n: int, size: int) -> list[Message]:
    return [
        {"role": "user", "content": f"question {n}"},
        {"role": "assistant", "content": [{"type": "text", "text": f"{n}:" + "a" * size}]},
    ]


async def test_the_cache_stays_within_its_bytes() -> None:
    bound = 1 << 20
    cache = MemorySessions(max_bytes=bound)
    one = len(orjson.dumps(history(0, 20_000)))
    for n in range(500):  # ~10 MB saved in all
        await cache.save(f"s{n}", history(n, 20_000))
        assert cache.bytes <= bound
    assert len(cache) == bound // one  # as many as fit, the newest
    assert await cache.get("s499") == history(499, 20_000)
    assert await cache.get("s0") == []


async def test_memory_plateaus_at_the_bound() -> None:
    """Traced allocations after 2,000 saves are no more than after 200: the bound holds
    in memory, not only in the count."""
    cache = MemorySessions(max_bytes=2 << 20)
    tracemalloc.start()
    try:
        samples = []
        for n in range(2_000):
            await cache.save(f"s{n}", history(n, 10_000))
            if n in (199, 1_999):
                gc.collect()
                samples.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
    assert samples[1] < samples[0] * 1.1, samples


async def test_expired_sessions_are_freed() -> None:
    cache = MemorySessions(ttl_s=0.05)
    for n in range(10):
        await cache.save(f"s{n}", history(n, 100))
    await asyncio.sleep(0.1)
    assert await cache.get("s1") == []
    assert len(cache) == 0 and cache.bytes == 0


@pytest.mark.redis
async def test_a_save_during_an_outage_reaches_redis_later(tmp_path: Path) -> None:
    async with redis_server(tmp_path) as server:
        client = redis.Redis.from_url(server.url, socket_connect_timeout=0.5)
        sessions = RedisSessions(client, "t:", ttl_s=60, timeout_s=1.0)
        try:
            await server.stop()
            await sessions.save("lost", history(1, 10))  # refused: kept here
            assert sessions.pending == {"lost"}
            assert await sessions.get("lost") == history(1, 10)
            await server.start()
            await sessions.save("next", history(2, 10))  # Redis is back: both go
            assert sessions.pending == set()
            saved = await client.get("t:lost")
            assert saved is not None and orjson.loads(saved) == history(1, 10)
        finally:
            await client.aclose()


async def test_an_idle_cache_frees_what_expires() -> None:
    cache = MemorySessions(ttl_s=0.1)
    await cache.save("s", history(1, 1_000))
    await asyncio.sleep(0.3)  # no save or read meanwhile
    assert len(cache) == 0 and cache.bytes == 0
