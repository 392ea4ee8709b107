"""Conversation histories by session id, so `sessionId` continues an earlier run: in this
process here, in Redis for every process in `store.redis.sessions`. A client-supplied
history is checked in `history`.
"""

from __future__ import annotations

import asyncio
import logging
import time

import orjson

from gateway.store.base import Message

__all__ = ["MemorySessions", "Message", "consistent_history"]

log = logging.getLogger(__name__)


class MemorySessions:
    """Histories in this process, dropped `ttl_s` after their last save, and the oldest
    dropped first past `max_bytes` (their size as JSON) or `max_sessions`."""

    def __init__(
        self, ttl_s: float = 3600.0, max_sessions: int = 10_000, max_bytes: int = 256 << 20
    ) -> None:
        self._ttl_s = ttl_s
        self._max = max_sessions
        self._max_bytes = max_bytes
        self.bytes = 0
        """The JSON size of every kept history."""
        # Insertion order is save order (a save moves its session to the end), so the
        # expired and the oldest are always at the front.
        self._items: dict[str, tuple[float, int, list[Message]]] = {}
        self._timer: asyncio.TimerHandle | None = None

    def __len__(self) -> int:
        return len(self._items)

    async def get(self, session_id: str) -> list[Message]:
        self._expire()
        item = self._items.get(session_id)
        return [] if item is None else list(item[2])

    async def save(self, session_id: str, messages: list[Message]) -> None:
        size = len(orjson.dumps(messages))
        self._drop(session_id)
        if size > self._max_bytes:
            log.warning("session %s (%d bytes) is larger than the cache", session_id, size)
            return
        self._items[session_id] = (time.monotonic(), size, list(messages))
        self.bytes += size
        self._expire()
        self._schedule()
        while len(self._items) > self._max or self.bytes > self._max_bytes:
            self._drop(next(iter(self._items)))

    def _schedule(self) -> None:
        """One timer, for the oldest entry: what expires is freed even if no other save
        or read comes along to notice (a timer per save would itself grow)."""
        if self._timer is not None or not self._items:
            return
        oldest = self._items[next(iter(self._items))][0]
        delay = max(0.0, oldest + self._ttl_s - time.monotonic()) + 0.01
        self._timer = asyncio.get_running_loop().call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._expire()
        self._schedule()

    def _expire(self) -> None:
        horizon = time.monotonic() - self._ttl_s
        while self._items:
            oldest = next(iter(self._items))
            if self._items[oldest][0] >= horizon:
                return
            self._drop(oldest)

    def _drop(self, session_id: str) -> None:
        item = self._items.pop(session_id, None)
        if item is not None:
            self.bytes -= item[1]


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
