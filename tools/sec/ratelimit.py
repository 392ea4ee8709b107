"""A rate limiter for asyncio that holds at the server: at most `rate` requests in any
`per` seconds, however long the network takes.

Counting request starts is not enough: a first batch slowed by connection setup reaches
the server late, the next batch on warm connections early, and the server sees a burst.
So a request holds its slot while in flight and for `per` seconds after it finishes; a
slot is free only when nothing it counted can still arrive inside the window.

SEC's fair-access rule counts requests across all of its hosts, so one limiter is shared
by every SEC request of the process. Waiters are served in arrival order.
"""

from __future__ import annotations

import asyncio
from collections import deque

__all__ = ["RateLimiter"]


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
