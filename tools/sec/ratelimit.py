"""A sliding-window rate limiter for asyncio: at most `rate` starts in any `per` seconds.

SEC's fair-access rule counts requests per second across all of its hosts, so one limiter
is shared by every SEC request of the process. Waiters are served in arrival order.
"""

from __future__ import annotations

import asyncio
from collections import deque

__all__ = ["RateLimiter"]


class RateLimiter:
    """`async with limiter:` (or `await limiter.acquire()`) before each request."""

    def __init__(self, rate: int, per: float = 1.0) -> None:
        if rate < 1 or per <= 0:
            raise ValueError("rate must be >= 1 and per > 0")
        self.rate = rate
        self.per = per
        self._starts: deque[float] = deque()
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        # The lock makes waiters queue in order; only its holder sleeps for a free slot.
        async with self._lock:
            loop = asyncio.get_running_loop()
            while True:
                now = loop.time()
                while self._starts and now - self._starts[0] >= self.per:
                    self._starts.popleft()
                if len(self._starts) < self.rate:
                    self._starts.append(now)
                    return
                await asyncio.sleep(self._starts[0] + self.per - now)

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc: object) -> None:
        return None
