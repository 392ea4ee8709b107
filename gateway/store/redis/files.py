"""File records in Redis (`{prefix}file:{file_id}`, JSON, expiring with sessions), so any
worker serves the download of a file another worker's run made. A record Redis refuses is
kept in this process, which can still serve that download."""

from __future__ import annotations

import asyncio
import logging

import orjson
import redis.asyncio as redis

from gateway.store.files import FileRecord, MemoryFileOwners
from gateway.store.redis.wire import OP_TIMEOUT_S, REDIS_ERRORS

log = logging.getLogger(__name__)


class RedisFileOwners:
    def __init__(self, client: redis.Redis, prefix: str, ttl_s: float) -> None:
        self._client = client
        self._prefix = f"{prefix}file:"
        self._ttl_s = max(1, round(ttl_s))
        self._here = MemoryFileOwners(ttl_s)

    async def record(self, file_id: str, record: FileRecord) -> None:
        await self._here.record(file_id, record)
        try:
            async with asyncio.timeout(OP_TIMEOUT_S):
                data = orjson.dumps(record.to_json())
                await self._client.set(self._prefix + file_id, data, ex=self._ttl_s)
        except REDIS_ERRORS as exc:
            log.warning(
                "cannot record file %s in Redis (%s): only this worker serves it", file_id, exc
            )

    async def get(self, file_id: str) -> FileRecord | None:
        here = await self._here.get(file_id)
        if here is not None:
            return here
        try:
            async with asyncio.timeout(OP_TIMEOUT_S):
                raw = await self._client.get(self._prefix + file_id)
        except REDIS_ERRORS as exc:
            log.warning("cannot read file %s from Redis (%s)", file_id, exc)
            return None
        return FileRecord.from_json(orjson.loads(raw)) if raw else None
