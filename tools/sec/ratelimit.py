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
Each request goes through `async with limiter.slot():`, which releases exactly what that
acquisition took, whichever way Redis was doing meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import redis.asyncio as redis
from redis.exceptions import RedisError

__all__ = ["Limiter", "RateLimiter", "SharedRateLimiter", "Slot"]

log = logging.getLogger(__name__)

REDIS_TIMEOUT_S = 2.0  # past this the shared limiter counts Redis as failed
REDIS_RETRY_S = 1.0  # after a failure, how long requests skip Redis before asking again
# Slots 5 % further apart than rate/per: a request that reaches the server a little late
# must not put rate + 1 of them inside one window at the server.
JITTER_MARGIN = 1.05


class Limiter(Protocol):
    def slot(self) -> AbstractAsyncContextManager[Any]:
        """Held around one request: entered when the request may start, left when it ends."""
        ...


class RateLimiter:
    """`async with limiter:` (or `limiter.slot()`) around each request."""

    def __init__(self, rate: int, per: float = 1.0) -> None:
        if rate < 1 or per <= 0:
            raise ValueError("rate must be >= 1 and per > 0")
        self.rate = rate
        self.per = per
        self._ends: deque[float] = deque()  # finish times still inside the window
        self._in_flight = 0
        self._lock = asyncio.Lock()
        self._finished = asyncio.Event()

    @property
    def in_flight(self) -> int:
        """Slots taken and not yet released."""
        return self._in_flight

    async def acquire(self) -> None:
        # The lock queues waiters in order; only its holder waits for a free slot.
        async with self._lock:
            loop = asyncio.get_running_loop()
            while True:
                now = loop.time()
                self._forget(now)
                if self._in_flight + len(self._ends) < self.rate:
                    self._in_flight += 1
                    return
                if self._ends:  # the oldest finished request leaves the window first
                    await asyncio.sleep(self._ends[0] + self.per - now)
                else:  # every slot is in flight: wait for one to finish
                    self._finished.clear()
                    await self._finished.wait()

    def release(self) -> None:
        if self._in_flight <= 0:
            raise RuntimeError("RateLimiter.release() without a slot taken")
        now = asyncio.get_running_loop().time()
        self._in_flight -= 1
        self._forget(now)  # bounded even when nobody waits in acquire
        self._ends.append(now)
        self._finished.set()

    def _forget(self, now: float) -> None:
        while self._ends and now - self._ends[0] >= self.per:
            self._ends.popleft()

    def slot(self) -> RateLimiter:
        return self  # its slots are all alike: nothing to carry from acquire to release

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self.release()


class Slot:
    """One acquisition of a `SharedRateLimiter`, released once into the local limiter that
    granted it; `shared` says whether Redis spaced it too (False: Redis had failed)."""

    __slots__ = ("_local", "shared")

    def __init__(self, local: RateLimiter, shared: bool) -> None:
        self._local: RateLimiter | None = local
        self.shared = shared

    def release(self) -> None:
        local, self._local = self._local, None
        if local is not None:
            local.release()


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
    they come from.

    Every request also holds a slot of this process's own `RateLimiter`, Redis or not, so
    one process never exceeds `rate` at the server: that limiter binds only when answers
    are slow (then it is what holds the rate at SEC). When Redis fails, the process goes on
    under it alone, and the switch either way cannot burst, as it already counts what
    Redis let through. Nothing is held in Redis: its key expires a second after the last
    reservation, so a request that never ends leaves no slot behind there.
    """

    def __init__(
        self,
        client: redis.Redis,
        key: str,
        rate: int,
        per: float = 1.0,
        *,
        redis_timeout_s: float = REDIS_TIMEOUT_S,
        redis_retry_s: float = REDIS_RETRY_S,
    ) -> None:
        self.interval_us = round(per / rate * 1e6 * JITTER_MARGIN)
        self.key = key
        self.local = RateLimiter(rate, per)
        self._reserve = client.register_script(_RESERVE)
        self._timeout_s = redis_timeout_s
        self._retry_s = redis_retry_s
        self._skip_redis_until = 0.0  # loop time; health, never consulted by a release
        self._failing = False  # for logging each outage once
        self.granted = {"shared": 0, "local": 0}  # slots given with and without Redis

    async def acquire(self) -> Slot:
        """Wait for a slot; the caller must `release()` the returned `Slot` once."""
        await self.local.acquire()
        try:
            shared = await self._wait_shared()
        except BaseException:  # cancelled waiting: nothing was sent, give the slot back
            self.local.release()
            raise
        self.granted["shared" if shared else "local"] += 1
        return Slot(self.local, shared)

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[Slot]:
        held = await self.acquire()
        try:
            yield held
        finally:
            held.release()

    async def _wait_shared(self) -> bool:
        """Wait for this request's turn in the shared budget; False if Redis cannot say."""
        loop = asyncio.get_running_loop()
        if loop.time() < self._skip_redis_until:
            return False
        try:
            async with asyncio.timeout(self._timeout_s):
                wait_us = int(await self._reserve(keys=[self.key], args=[self.interval_us]))
        except (RedisError, OSError, TimeoutError) as exc:
            self._skip_redis_until = loop.time() + self._retry_s
            if not self._failing:
                log.warning("SEC rate limit: Redis failed (%s); limiting this process alone", exc)
            self._failing = True
            return False
        if self._failing:
            log.info("SEC rate limit: Redis is back; sharing the budget again")
        self._failing = False
        if wait_us > 0:
            await asyncio.sleep(wait_us / 1e6)
        return True
