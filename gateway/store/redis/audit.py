"""The audit lines in a Redis stream shared by every replica: `XADD MAXLEN ~`, one
pipeline per batch (the writer sends at most `ops.audit.BATCH` lines at a time)."""

from __future__ import annotations

import asyncio

import redis.asyncio as redis

from gateway.store.redis.wire import OP_TIMEOUT_S, REDIS_ERRORS


class RedisAudit:
    """`AuditSink` on a Redis stream (`{prefix}audit`), kept at about `maxlen` lines."""

    errors: tuple[type[BaseException], ...] = REDIS_ERRORS

    def __init__(self, url: str, stream_key: str, maxlen: int = 100_000) -> None:
        self.client = redis.Redis.from_url(url)
        self.stream_key = stream_key
        self.maxlen = maxlen

    async def add(self, lines: list[bytes]) -> None:
        pipeline = self.client.pipeline(transaction=False)
        async with asyncio.timeout(OP_TIMEOUT_S), pipeline as pipe:
            for line in lines:
                pipe.xadd(self.stream_key, {"line": line}, maxlen=self.maxlen, approximate=True)
            await pipe.execute()

    async def close(self) -> None:
        await self.client.aclose()
