"""The admin API's keys in Redis, shared by every replica:

{prefix}keys:{key_id}    the key's record (JSON, no secret)
{prefix}keys:names       hash name -> key_id (HSETNX: a name is taken once)
{prefix}keys:generation  INCR on every change; workers poll it
"""

from __future__ import annotations

import asyncio
from typing import Any

import redis.asyncio as redis

from gateway.store.keys import StoredKey
from gateway.store.redis.wire import OP_TIMEOUT_S


class RedisKeys:
    """`KeyStore` in Redis."""

    def __init__(self, url: str, prefix: str) -> None:
        self.client = redis.Redis.from_url(url, socket_timeout=OP_TIMEOUT_S)
        self._prefix = f"{prefix}keys:"

    async def open(self) -> None:
        pass

    async def add(self, key: StoredKey) -> bool:
        async with asyncio.timeout(OP_TIMEOUT_S):
            if not await self.client.hsetnx(f"{self._prefix}names", key.name, key.key_id):
                return False
            await self.put(key)
        return True

    async def put(self, key: StoredKey) -> None:
        async with asyncio.timeout(OP_TIMEOUT_S), self.client.pipeline() as pipe:
            pipe.set(f"{self._prefix}{key.key_id}", key.dumps())
            pipe.incr(f"{self._prefix}generation")
            await pipe.execute()

    async def get(self, key_id: str) -> StoredKey | None:
        async with asyncio.timeout(OP_TIMEOUT_S):
            raw = await self.client.get(f"{self._prefix}{key_id}")
        return StoredKey.loads(raw) if raw is not None else None

    async def all(self) -> list[StoredKey]:
        async with asyncio.timeout(OP_TIMEOUT_S):
            ids: list[Any] = await self.client.hvals(f"{self._prefix}names")
            if not ids:
                return []
            raws: list[Any] = await self.client.mget([self._prefix + i.decode() for i in ids])
        found = [StoredKey.loads(raw) for raw in raws if raw is not None]
        return sorted(found, key=lambda k: k.created_at)

    async def generation(self) -> int:
        async with asyncio.timeout(OP_TIMEOUT_S):
            value = await self.client.get(f"{self._prefix}generation")
        return int(value or 0)

    async def close(self) -> None:
        await self.client.aclose()
