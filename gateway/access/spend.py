"""The per-key daily budget in dollars (`GATEWAY_DAILY_USD_BUDGET`), beside the token
budget of limits.py and checked the same way: when a run starts, a key that has spent its
budget this UTC day gets 429 `RATE_LIMIT_ERROR` with `Retry-After` (seconds to midnight),
before any SSE header. A run's cost is charged when its task ends, so a run that starts
under the budget finishes even if it crosses it. Runs of models without a price charge
nothing (their cost is unknown, not zero; `/health` and `final` say so).

    MemorySpend   one process
    RedisSpend    every replica sharing REDIS_URL: `{prefix}limit:{name}:usd:{day}`,
                  INCRBYFLOAT, kept two days; if Redis does not answer, starts are let
                  through, as the other limits do
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from typing import Protocol

import redis.asyncio as redis

from gateway.access.limits import seconds_to_midnight, utc_day
from gateway.errors import GatewayError
from gateway.ops.metrics import Metrics
from gateway.store.redis.wire import REDIS_ERRORS

log = logging.getLogger(__name__)

USD_TTL_S = 2 * 86_400
OP_TIMEOUT_S = 2.0


class SpendStore(Protocol):
    async def spent(self, name: str, day: str) -> float | None:
        """Dollars charged to `name` on `day` (None: the store did not answer)."""

    async def charge(self, name: str, day: str, usd: float) -> None: ...

    async def close(self) -> None: ...


class MemorySpend:
    def __init__(self) -> None:
        self._spent: dict[str, tuple[str, float]] = {}  # name: (UTC day, dollars)

    async def spent(self, name: str, day: str) -> float | None:
        charged_day, usd = self._spent.get(name, (day, 0.0))
        return usd if charged_day == day else 0.0

    async def charge(self, name: str, day: str, usd: float) -> None:
        charged_day, before = self._spent.get(name, (day, 0.0))
        self._spent[name] = (day, (before if charged_day == day else 0.0) + usd)

    async def close(self) -> None:
        pass


class RedisSpend:
    def __init__(self, url: str, prefix: str) -> None:
        self._redis = redis.Redis.from_url(url, socket_timeout=OP_TIMEOUT_S)
        self._prefix = f"{prefix}limit:"

    def _key(self, name: str, day: str) -> str:
        return f"{self._prefix}{name}:usd:{day}"

    async def spent(self, name: str, day: str) -> float | None:
        try:
            value = await asyncio.wait_for(self._redis.get(self._key(name, day)), OP_TIMEOUT_S)
        except (*REDIS_ERRORS, TimeoutError) as exc:
            log.warning("limits: Redis did not answer (%s); a start of %s let through", exc, name)
            return None
        return float(value) if value is not None else 0.0

    async def charge(self, name: str, day: str, usd: float) -> None:
        key = self._key(name, day)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.incrbyfloat(key, usd)
            pipe.expire(key, USD_TTL_S)
            await asyncio.wait_for(pipe.execute(), OP_TIMEOUT_S)

    async def close(self) -> None:
        await self._redis.aclose()


class Spend:
    """Admits run starts under a key's daily dollars, and charges each run's cost."""

    def __init__(self, budget_usd: float, store: SpendStore, metrics: Metrics) -> None:
        self.budget_usd = budget_usd
        self._store = store
        self._metrics = metrics
        self._charging: set[asyncio.Task[None]] = set()

    async def admit(self, name: str) -> None:
        """Return, or raise `RateLimited` (limit `daily_usd`) when today's budget is spent."""
        now = time.time()
        spent = await self._store.spent(name, utc_day(now))
        if spent is not None and spent >= self.budget_usd:
            self._metrics.rate_limited.labels(name, "daily_usd").inc()
            raise OverBudget(name, self.budget_usd, seconds_to_midnight(now))

    def charge(self, name: str, usd: float | None) -> None:
        """Charge a finished run's cost (None or 0: nothing to charge) to today."""
        if not usd:
            return
        task = asyncio.get_running_loop().create_task(self._charge(name, usd))
        self._charging.add(task)
        task.add_done_callback(self._charging.discard)

    async def settled(self) -> None:
        while self._charging:
            await asyncio.gather(*self._charging, return_exceptions=True)

    async def close(self) -> None:
        await self.settled()
        await self._store.close()

    async def _charge(self, name: str, usd: float) -> None:
        try:
            await self._store.charge(name, utc_day(time.time()), usd)
        except (Exception, TimeoutError) as exc:
            log.warning("limits: cannot charge $%.6f to %s (%s)", usd, name, exc)


class OverBudget(GatewayError):
    """A key spent its dollars for today: the same 429 as its other limits."""

    def __init__(self, name: str, budget_usd: float, retry_after_s: float) -> None:
        retry = max(1, math.ceil(retry_after_s))
        super().__init__(
            "RATE_LIMIT_ERROR",
            f"Key {name!r} is over its daily_usd limit ({budget_usd}); retry in {retry} s",
            {"limit": "daily_usd", "value": budget_usd, "key": name, "retry_after_s": retry},
        )
        self.headers["Retry-After"] = str(retry)
