"""The shared SEC limiter while its Redis comes and goes: a real redis-server killed and
restarted, or frozen (SIGSTOP) and thawed, under many concurrent SEC calls. Every slot is
released where it was taken, the rate at SEC holds throughout, and the next outage after
all that still lets calls through."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import redis.asyncio as redis

from tests.procs.redis import RedisServer
from tests.tools.conftest import USER_AGENT, FakeSecHosts
from tests.tools.test_shared_sec import busiest_second
from tools.sec.live import LiveSec
from tools.sec.ratelimit import SharedRateLimiter
from tools.toolset import SEC_REQUESTS_PER_SECOND

pytestmark = pytest.mark.redis

KEY = "t:sec:limit"
RATE = SEC_REQUESTS_PER_SECOND
CIKS = (320193, 789019, 1045810, 1318605)  # recorded submissions


class FreezableRedis(RedisServer):
    """A redis-server that can also be frozen: its port still accepts, nothing answers."""

    frozen = False

    def freeze(self, frozen: bool) -> None:
        assert self._process is not None
        os.kill(self._process.pid, signal.SIGSTOP if frozen else signal.SIGCONT)
        self.frozen = frozen

    async def stop(self) -> None:
        if self.frozen:
            self.freeze(False)  # a stopped process would not act on SIGTERM
        await super().stop()


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[FreezableRedis]:
    server = FreezableRedis(tmp_path)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
async def client(server: FreezableRedis) -> AsyncIterator[redis.Redis]:
    client = redis.Redis.from_url(server.url, socket_connect_timeout=0.5)
    try:
        yield client
    finally:
        await client.aclose()


def limiter_on(client: redis.Redis, **timing: float) -> SharedRateLimiter:
    # Short Redis timeouts so that a frozen Redis costs the test fractions of a second.
    timing = {"redis_timeout_s": 0.3, "redis_retry_s": 0.2} | timing
    return SharedRateLimiter(client, KEY, RATE, 1.0, **timing)


async def test_each_slot_goes_back_where_it_was_taken(
    server: FreezableRedis, client: redis.Redis
) -> None:
    limiter = limiter_on(client, redis_retry_s=0.0)
    first = await limiter.acquire()  # through Redis
    await server.stop()
    second = await limiter.acquire()  # Redis gone: this process alone
    await server.start()
    third = await limiter.acquire()  # Redis back
    assert (first.shared, second.shared, third.shared) == (True, False, True)
    assert limiter.local.in_flight == 3
    for slot in (second, first, third, second):  # in any order; a second release is a no-op
        slot.release()
    assert limiter.local.in_flight == 0


async def test_no_burst_when_redis_goes_or_comes_back(
    server: FreezableRedis, client: redis.Redis
) -> None:
    limiter = limiter_on(client, redis_retry_s=0.0)
    loop = asyncio.get_running_loop()
    starts: list[float] = []

    async def burst() -> None:
        async def one() -> None:
            async with limiter.slot():
                starts.append(loop.time())

        await asyncio.gather(*(one() for _ in range(RATE)))

    await burst()  # Redis spaces them over a second
    await server.stop()
    await burst()  # alone: these wait until Redis' requests leave the window
    await server.start()
    await burst()  # Redis again: these wait until the lone ones leave it
    assert limiter.granted == {"shared": 2 * RATE, "local": RATE}
    assert busiest_second(starts) <= RATE
    assert limiter.local.in_flight == 0


@pytest.mark.parametrize("lone_in_flight", [False, True])
async def test_a_caller_cancelled_while_redis_is_frozen_leaves_no_slot(
    server: FreezableRedis, client: redis.Redis, lone_in_flight: bool
) -> None:
    limiter = limiter_on(client, redis_timeout_s=30.0, redis_retry_s=0.0)
    lone = None
    if lone_in_flight:  # then a caller takes its local slot before it asks Redis
        await server.stop()
        lone = await limiter.acquire()
        await server.start()
    assert await client.ping()  # connected: the frozen server takes the command, never answers
    server.freeze(True)
    waiting = asyncio.create_task(limiter.acquire())
    if lone is None:
        await asyncio.sleep(0.2)  # nothing to watch: it holds nothing while Redis is silent
    async with asyncio.timeout(5):
        while lone is not None and limiter.local.in_flight < 2:  # its slot, then Redis
            await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    assert not waiting.done()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert limiter.local.in_flight == (1 if lone else 0)
    if lone is not None:
        lone.release()
    assert limiter.local.in_flight == 0


async def flap(server: FreezableRedis, until: asyncio.Future[None]) -> int:
    """Take Redis away and back until `until` is done, killing and freezing in turn."""
    outages = 0
    while not until.done():
        await asyncio.sleep(0.3)
        if outages % 2:
            server.freeze(True)
            await asyncio.sleep(0.4)
            server.freeze(False)
        else:
            await server.stop()
            await asyncio.sleep(0.4)
            await server.start()
        outages += 1
    return outages


async def test_redis_flapping_under_load_leaks_nothing_and_holds_the_rate(
    fake_sec: FakeSecHosts, server: FreezableRedis, client: redis.Redis
) -> None:
    limiter = limiter_on(client)
    fake_sec.fake.stall_s = 0.15  # calls are in flight while Redis goes and comes back
    async with aiohttp.ClientSession() as session:
        sec = LiveSec(
            session,
            user_agent=USER_AGENT,
            bases={host: fake_sec.urls[host] for host in ("www", "data", "efts")},
            limiter=limiter,
            request_timeout_s=5.0,
        )

        async def caller(paths: list[str]) -> None:
            for path in paths:  # one after another: acquisitions spread over every outage
                assert '"cik"' in await sec.get_text("data", path)

        async def calls(count: int) -> None:
            """`count` calls from 2 x RATE callers at once."""
            paths = [f"/submissions/CIK{CIKS[n % len(CIKS)]:010d}.json" for n in range(count)]
            async with asyncio.timeout(count / RATE + 10):  # a leaked slot would hang here
                await asyncio.gather(*(caller(paths[i :: 2 * RATE]) for i in range(2 * RATE)))

        busy = asyncio.ensure_future(calls(6 * RATE))
        outages = await flap(server, busy)
        await busy
        assert outages >= 4, outages
        # Both ways were taken, many times over, while calls were in flight.
        assert min(limiter.granted.values()) >= RATE, limiter.granted
        assert limiter.local.in_flight == 0
        # However Redis was doing, SEC never saw more than RATE requests in a second.
        assert busiest_second([r.at for r in fake_sec.fake.requests]) <= RATE

        # Nothing is held in Redis either: the budget's key expires once calls stop.
        async with asyncio.timeout(10):
            while await client.exists(KEY):
                await asyncio.sleep(0.1)

        # The next outage: every call still goes through, at the rate, none hangs.
        await server.stop()
        fake_sec.fake.requests.clear()
        granted_local = limiter.granted["local"]
        await calls(3 * RATE)
        assert limiter.granted["local"] == granted_local + 3 * RATE
        assert busiest_second([r.at for r in fake_sec.fake.requests]) <= RATE
        assert limiter.local.in_flight == 0
