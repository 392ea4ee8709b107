"""A rate limiter for asyncio that holds at the server: at most `rate` requests in any
`per` seconds, however long the network takes.

Counting request starts is not enough: a first batch slowed by connection setup reaches
the server late, the next batch on warm connections early, and the server sees a burst.
So a request holds its slot while in flight and for `per` seconds after it finishes; a
slot is free only when nothing it counted can still arrive inside the window.

SEC's fair-access rule counts requests across all of its hosts, so one limiter is shared
by every SEC request of the process. Waiters are served in arrival order.

With Redis, `SharedRateLimiter` holds the budget for every process and machine that use
the same Redis (N workers each at 8/s would send N x 8 and get the host blocked by SEC).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Protocol

import redis.asyncio as redis
from redis.exceptions import RedisError

__all__ = ["Limiter", "RateLimiter", "SharedRateLimiter"]

log = logging.getLogger(__name__)

REDIS_TIMEOUT_S = 2.0  # past this the shared limiter counts Redis as failed
# Slots 5 % further apart than rate/per: a request that reaches the server a little late
# must not put rate + 1 of them inside one window at the server.
JITTER_MARGIN = 1.05


class Limiter(Protocol):
    async def __aenter__(self) -> None: ...
    async def __aexit__(self, *exc: object) -> None: ...


class RateLimiter:
    """`async with limiter:` around each request."""

    def __init__(self, rate: int, per: float = 1.0) -> None:
        if rate < 1 or per <= 0:
            raise ValueError("rate must be >= 1 and per > 0")
        self.rate = rate
        self.per = per
        self._ends: deque[float] = deque()  # finish times still inside the window
        self._in_flight = 0
        self._lock = asyncio.Lock()
        self._finished = asyncio.Event()

    async def acquire(self) -> None:
        # The lock queues waiters in order; only its holder waits for a free slot.
        async with self._lock:
            loop = asyncio.get_running_loop()
            while True:
                now = loop.time()
                while self._ends and now - self._ends[0] >= self.per:
                    self._ends.popleft()
                if self._in_flight + len(self._ends) < self.rate:
                    self._in_flight += 1
                    return
                if self._ends:  # the oldest finished request leaves the window first
                    await asyncio.sleep(self._ends[0] + self.per - now)
                else:  # every slot is in flight: wait for one to finish
                    self._finished.clear()
                    await self._finished.wait()

    def release(self) -> None:
        self._in_flight -= 1
        self._ends.append(asyncio.get_running_loop().time())
        self._finished.set()

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self.release()


# GCRA as a queue: each caller reserves the next free slot, `interval` after the previous
# one, and learns how long to wait for it, in one round trip; Redis' own clock, so every
# process agrees. KEYS[1] holds the next free slot (µs); ARGV[1] the interval (µs).
_RESERVE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local slot = tonumber(redis.call('GET', KEYS[1]) or '0')
if slot < now then slot = now end
local nxt = slot + tonumber(ARGV[1])
redis.call('SET', KEYS[1], string.format('%.0f', nxt), 'PX', math.ceil((nxt - now) / 1000) + 1000)
return slot - now
"""


class SharedRateLimiter:
    """The same budget for every process on one Redis: request starts at least
    `per / rate` apart (GCRA), so any `per` seconds hold at most `rate` of them wherever
    they come from. If Redis fails, each process falls back to its own `RateLimiter`."""

    def __init__(self, client: redis.Redis, key: str, rate: int, per: float = 1.0) -> None:
        self.interval_us = round(per / rate * 1e6 * JITTER_MARGIN)
        self._key = key
        self._reserve = client.register_script(_RESERVE)
        self._local = RateLimiter(rate, per)
        self._fell_back = False

    async def acquire(self) -> None:
        try:
            async with asyncio.timeout(REDIS_TIMEOUT_S):
                wait_us = int(await self._reserve(keys=[self._key], args=[self.interval_us]))
        except (RedisError, OSError, TimeoutError) as exc:
            if not self._fell_back:
                log.warning("SEC rate limit: Redis failed (%s); limiting this process alone", exc)
            self._fell_back = True
            await self._local.acquire()
            return
        self._fell_back = False
        if wait_us > 0:
            await asyncio.sleep(wait_us / 1e6)

    def release(self) -> None:
        if self._fell_back:
            self._local.release()

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self.release()
