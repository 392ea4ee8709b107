"""Conversation histories in Redis, shared by every process."""

from __future__ import annotations

import asyncio
import logging

import orjson
import redis.asyncio as redis
from redis.exceptions import RedisError

from gateway.store.base import Message
from gateway.store.sessions import MemorySessions

log = logging.getLogger(__name__)


class RedisSessions:
    """Histories in Redis (`{prefix}{session_id}`, JSON, expiring `ttl_s` after each save),
    shared by every process. A save Redis refuses is kept in this process and written
    again with the next save that succeeds; until then this process reads it from here."""

    def __init__(
        self,
        client: redis.Redis,
        prefix: str,
        ttl_s: float,
        timeout_s: float = 5.0,
        max_bytes: int = 256 << 20,
    ) -> None:
        self._client = client
        self._prefix = prefix
        self._ttl_s = max(1, round(ttl_s))
        self._timeout_s = timeout_s
        self._fallback = MemorySessions(ttl_s, max_bytes=max_bytes)
        self.pending: set[str] = set()
        """Sessions saved only here while Redis failed: to write again."""

    async def get(self, session_id: str) -> list[Message]:
        if session_id in self.pending:  # newer than whatever Redis holds
            return await self._fallback.get(session_id)
        try:
            async with asyncio.timeout(self._timeout_s):
                raw = await self._client.get(self._prefix + session_id)
        except (RedisError, OSError, TimeoutError) as exc:
            log.warning("cannot read session %s from Redis (%s)", session_id, exc)
            return await self._fallback.get(session_id)
        return list(orjson.loads(raw)) if raw else []

    async def save(self, session_id: str, messages: list[Message]) -> None:
        try:
            await self._write(session_id, messages)
        except (RedisError, OSError, TimeoutError) as exc:
            log.warning(
                "cannot save session %s to Redis (%s); kept here, retried later", session_id, exc
            )
            await self._fallback.save(session_id, messages)
            self.pending.add(session_id)
            return
        self.pending.discard(session_id)
        await self._retry_pending()

    async def _write(self, session_id: str, messages: list[Message]) -> None:
        data = orjson.dumps(messages)
        async with asyncio.timeout(self._timeout_s):
            await self._client.set(self._prefix + session_id, data, ex=self._ttl_s)

    async def _retry_pending(self) -> None:
        """Redis answers again: write what it missed (what expired meanwhile is gone)."""
        for session_id in list(self.pending):
            messages = await self._fallback.get(session_id)
            try:
                if messages:
                    await self._write(session_id, messages)
            except (RedisError, OSError, TimeoutError):
                return  # down again: the next save tries again
            self.pending.discard(session_id)
            log.info("session %s saved to Redis after an outage", session_id)
