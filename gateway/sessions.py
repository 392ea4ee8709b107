"""Conversation histories by session id, so `sessionId` continues an earlier run (in this
process, or in Redis for every process). A client-supplied history is checked in `history`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Protocol

import orjson
import redis.asyncio as redis
from redis.exceptions import RedisError

log = logging.getLogger(__name__)

Message = dict[str, Any]


class SessionStore(Protocol):
    """Async, so a store can live in another server (Redis); memory answers at once."""

    async def get(self, session_id: str) -> list[Message]: ...
    async def save(self, session_id: str, messages: list[Message]) -> None: ...


class MemorySessions:
    """Histories in this process, dropped `ttl_s` after their last save."""

    def __init__(self, ttl_s: float = 3600.0, max_sessions: int = 10_000) -> None:
        self._ttl_s = ttl_s
        self._max = max_sessions
        self._items: dict[str, tuple[float, list[Message]]] = {}

    async def get(self, session_id: str) -> list[Message]:
        item = self._items.get(session_id)
        if item is None or time.monotonic() - item[0] > self._ttl_s:
            return []
        return list(item[1])

    async def save(self, session_id: str, messages: list[Message]) -> None:
        self._items.pop(session_id, None)
        self._items[session_id] = (time.monotonic(), list(messages))
        while len(self._items) > self._max:  # oldest first: dicts keep insertion order
            del self._items[next(iter(self._items))]


class RedisSessions:
    """Histories in Redis (`{prefix}{session_id}`, JSON, expiring `ttl_s` after each save),
    shared by every process; kept in this process only while Redis fails."""

    def __init__(
        self, client: redis.Redis, prefix: str, ttl_s: float, timeout_s: float = 5.0
    ) -> None:
        self._client = client
        self._prefix = prefix
        self._ttl_s = max(1, round(ttl_s))
        self._timeout_s = timeout_s
        self._fallback = MemorySessions(ttl_s)

    async def get(self, session_id: str) -> list[Message]:
        try:
            async with asyncio.timeout(self._timeout_s):
                raw = await self._client.get(self._prefix + session_id)
        except (RedisError, OSError, TimeoutError) as exc:
            log.warning("cannot read session %s from Redis (%s)", session_id, exc)
            return await self._fallback.get(session_id)
        return list(orjson.loads(raw)) if raw else []

    async def save(self, session_id: str, messages: list[Message]) -> None:
        data = orjson.dumps(messages)
        try:
            async with asyncio.timeout(self._timeout_s):
                await self._client.set(self._prefix + session_id, data, ex=self._ttl_s)
        except (RedisError, OSError, TimeoutError) as exc:
            log.warning("cannot save session %s to Redis (%s)", session_id, exc)
            await self._fallback.save(session_id, messages)


def consistent_history(messages: list[Message]) -> list[Message]:
    """The longest prefix a next request can build on: no `tool_use` left unanswered,
    and ending on an assistant turn (an interrupted run drops its unanswered tail)."""
    end = len(messages)
    while end and not (
        messages[end - 1]["role"] == "assistant" and not _tool_ids(messages[end - 1])
    ):
        end -= 1
    return messages[:end]


def _tool_ids(message: Message) -> list[str]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b.get("id", "") for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
