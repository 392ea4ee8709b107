"""The spend ledger in Redis: one hash per key and period, `{prefix}spend:{name}:{period}`,
its fields `{model}|{field}`, added to with HINCRBYFLOAT in one transaction per charge.
A day's hash is kept DAYS_KEPT (40) days, a month's MONTH_KEPT_DAYS (400), by its TTL."""

from __future__ import annotations

import asyncio
from typing import Any

import redis.asyncio as redis

from gateway.store.redis.wire import OP_TIMEOUT_S
from gateway.store.spend import DAYS_KEPT, MONTH_KEPT_DAYS, ByModel

DAY_TTL_S = DAYS_KEPT * 86_400
MONTH_TTL_S = MONTH_KEPT_DAYS * 86_400


class RedisLedger:
    """`SpendLedger` shared by every replica."""

    def __init__(self, url: str, prefix: str) -> None:
        self.client = redis.Redis.from_url(url, socket_timeout=OP_TIMEOUT_S)
        self._prefix = f"{prefix}spend:"

    def add_now(
        self, name: str, model: str, in_periods: tuple[str, ...], amounts: dict[str, float]
    ) -> bool:
        return False  # a write: `add`, in the background

    async def add(
        self, name: str, model: str, in_periods: tuple[str, ...], amounts: dict[str, float]
    ) -> None:
        async with asyncio.timeout(OP_TIMEOUT_S), self.client.pipeline() as pipe:
            for period in in_periods:
                key = f"{self._prefix}{name}:{period}"
                for field, amount in amounts.items():
                    pipe.hincrbyfloat(key, f"{model}|{field}", amount)
                pipe.expire(key, DAY_TTL_S if len(period) > 7 else MONTH_TTL_S)
            await pipe.execute()

    async def read(self, name: str, period: str) -> ByModel:
        async with asyncio.timeout(OP_TIMEOUT_S):
            raw: dict[Any, Any] = await self.client.hgetall(f"{self._prefix}{name}:{period}")
        spent: ByModel = {}
        for key, value in raw.items():
            model, _, field = key.decode().rpartition("|")
            spent.setdefault(model, {})[field] = float(value)
        return spent

    async def close(self) -> None:
        await self.client.aclose()
