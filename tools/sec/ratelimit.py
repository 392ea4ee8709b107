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
acquisition took, whatever Redis did meanwhile.
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

    def occupy(self) -> None:
        """Count a request another limiter let through, without waiting: it may take the
        count past `rate`, holding back this limiter's own callers until the window clears."""
        self._in_flight += 1

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
    """One acquisition of a `SharedRateLimiter`: `shared` says whether Redis spaced it
    (False: Redis had failed and this process's own limiter alone let it through).
    `release()` gives back what this acquisition took, once."""

    __slots__ = ("_owner", "shared")

    def __init__(self, owner: SharedRateLimiter, shared: bool) -> None:
        self._owner: SharedRateLimiter | None = owner
        self.shared = shared

    def release(self) -> None:
        owner, self._owner = self._owner, None
        if owner is not None:
            owner._release(self.shared)


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

    If Redis fails, the process goes on under its own `RateLimiter` alone. That limiter
    counts every request of the process, Redis' too (without making them wait), so the
    first requests after Redis fails wait for the window Redis' requests still fill. The
    other way, while requests let through alone are in flight or in the window, Redis'
    requests also wait for the local limiter: Redis knows nothing of those. So one process
    never bursts past `rate` when Redis goes or comes back. Nothing is held in Redis: its
    key expires a second after the last reservation.
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
        self._alone = 0  # slots let through without Redis, not yet released
        self._alone_until = 0.0  # loop time the last of them leaves the window
        self.granted = {"shared": 0, "local": 0}  # slots given with and without Redis

    async def acquire(self) -> Slot:
        """Wait for a slot; the caller must `release()` the returned `Slot` once."""
        held = False
        try:
            if self._lone_in_window():  # they count too, and Redis knows nothing of them
                await self.local.acquire()
                held = True
            wait_s = await self._reserve_slot()
            if not held:
                if wait_s is None or self._lone_in_window():
                    await self.local.acquire()
                else:  # counted from now: a lone request must not start beside it
                    self.local.occupy()
                held = True
            if wait_s:
                await asyncio.sleep(wait_s)
        except BaseException:  # cancelled waiting: nothing was sent, give the slot back
            if held:
                self.local.release()
            raise
        shared = wait_s is not None
        if not shared:
            self._alone += 1
        self.granted["shared" if shared else "local"] += 1
        return Slot(self, shared)

    def _lone_in_window(self) -> bool:
        """Whether requests let through without Redis are in flight or in the window."""
        return self._alone > 0 or asyncio.get_running_loop().time() < self._alone_until

    def _release(self, shared: bool) -> None:
        self.local.release()
        if not shared:
            self._alone -= 1
            now = asyncio.get_running_loop().time()
            self._alone_until = max(self._alone_until, now + self.local.per)

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[Slot]:
        held = await self.acquire()
        try:
            yield held
        finally:
            held.release()

    async def _reserve_slot(self) -> float | None:
        """Reserve this request's turn in the shared budget: how long to wait for it, or
        None if Redis cannot say."""
        loop = asyncio.get_running_loop()
        if loop.time() < self._skip_redis_until:
            return None
        try:
            async with asyncio.timeout(self._timeout_s):
                wait_us = int(await self._reserve(keys=[self.key], args=[self.interval_us]))
        except (RedisError, OSError, TimeoutError) as exc:
            self._skip_redis_until = loop.time() + self._retry_s
            if not self._failing:
                log.warning("SEC rate limit: Redis failed (%s); limiting this process alone", exc)
            self._failing = True
            return None
        if self._failing:
            log.info("SEC rate limit: Redis is back; sharing the budget again")
        self._failing = False
        return max(0, wait_us) / 1e6
