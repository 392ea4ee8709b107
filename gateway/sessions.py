"""Conversation histories by session id, so `sessionId` continues an earlier run (in this
process, or in Redis for every process); and the validation of a client-supplied history
against what the Messages API accepts.
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


def _result_ids(message: Message) -> list[str]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [
        b.get("tool_use_id", "")
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]


def history_problem(messages: list[Message]) -> str | None:
    """What the Messages API would reject in this history, or None if it looks valid."""
    if not messages:
        return "messages must not be empty"
    for i, message in enumerate(messages):
        problem = _message_problem(i, message)
        if problem:
            return problem
        expected = "user" if i % 2 == 0 else "assistant"
        if message["role"] != expected:
            return f"messages[{i}].role must be {expected!r}: roles alternate, starting with user"
        answered = set(_tool_ids(messages[i - 1])) if i and expected == "user" else set()
        for tool_use_id in _result_ids(message):
            if tool_use_id not in answered:
                return (
                    f"messages[{i}] has a tool_result for {tool_use_id!r} with no matching "
                    "tool_use in the assistant message before it"
                )
        if expected == "assistant" and i + 1 < len(messages):
            missing = set(_tool_ids(message)) - set(_result_ids(messages[i + 1]))
            if missing:
                return f"messages[{i}] has tool_use {sorted(missing)} with no tool_result after it"
    if messages[-1]["role"] != "user":
        return "the last message must be from the user"
    return None


def _message_problem(i: int, message: Any) -> str | None:
    if not isinstance(message, dict):
        return f"messages[{i}] must be an object"
    if message.get("role") not in ("user", "assistant"):
        return f"messages[{i}].role must be 'user' or 'assistant'"
    content = message.get("content")
    if isinstance(content, str):
        return None if content else f"messages[{i}].content must not be empty"
    if not isinstance(content, list) or not content:
        return f"messages[{i}].content must be a string or a non-empty list of blocks"
    for j, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            return f"messages[{i}].content[{j}] must be an object with a 'type'"
    return None
