"""Small async caches: a TTL cache with single flight, and an LRU for converted documents."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

__all__ = ["LruCache", "TtlCache"]

T = TypeVar("T")


class TtlCache:
    """Values kept for `ttl_s`; concurrent misses on one key load it once."""

    def __init__(
        self,
        ttl_s: float,
        *,
        max_entries: int = 64,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._clock = clock
        self._items: OrderedDict[str, tuple[float, Any]] = OrderedDict()
        self._locks: dict[str, asyncio.Lock] = {}

    def _fresh(self, key: str) -> tuple[bool, Any]:
        item = self._items.get(key)
        if item is None or item[0] <= self._clock():
            return False, None
        return True, item[1]

    async def get(self, key: str, load: Callable[[], Awaitable[T]]) -> T:
        hit, value = self._fresh(key)
        if hit:
            return value  # type: ignore[no-any-return]
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            hit, value = self._fresh(key)
            if not hit:
                value = await load()
                self._items[key] = (self._clock() + self.ttl_s, value)
                self._items.move_to_end(key)
                self._evict()
        return value  # type: ignore[no-any-return]

    def _evict(self) -> None:
        while len(self._items) > self.max_entries:
            key, _ = self._items.popitem(last=False)
            lock = self._locks.get(key)
            if lock is not None and not lock.locked():
                del self._locks[key]


class LruCache(Generic[T]):
    """The `size` most recently used values."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, T] = OrderedDict()

    def get(self, key: str) -> T | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: str, value: T) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)
