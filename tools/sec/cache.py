"""Small async caches: a TTL cache with single flight, an LRU for converted documents, and
SEC's responses in Redis, shared by every process (`SharedResponses`)."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

import redis.asyncio as redis
from redis.exceptions import RedisError

__all__ = ["LruCache", "SharedResponses", "TtlCache", "response_ttl_s"]

log = logging.getLogger(__name__)

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


# How long SEC's answers stay good, by host and path prefix: filed documents never change,
# ticker maps and filing lists change daily at most, searches may find new filings.
_TTLS: list[tuple[str, str, float]] = [
    ("www", "/Archives/", 24 * 3600),
    ("www", "/files/company_tickers", 6 * 3600),
    ("data", "/submissions/", 600),
    ("data", "/api/xbrl/", 3600),
    ("efts", "/", 600),
]
MAX_SHARED_BYTES = 16 << 20  # a larger body (a big filer's facts) is not worth a Redis value
REDIS_TIMEOUT_S = 2.0


def response_ttl_s(host: str, path: str) -> float:
    for prefix_host, prefix, ttl in _TTLS:
        if host == prefix_host and path.startswith(prefix):
            return ttl
    return 600


class SharedResponses:
    """SEC response bodies in Redis under `{prefix}sec:{sha1 of the URL}`, with TTLs: one
    worker's request answers every other's. Redis failing is a miss, never an error."""

    def __init__(self, client: redis.Redis, prefix: str) -> None:
        self._client = client
        self._prefix = prefix

    def _key(self, host: str, path: str, params: dict[str, str] | None) -> str:
        query = "&".join(f"{k}={v}" for k, v in sorted((params or {}).items()))
        return self._prefix + "sec:" + hashlib.sha1(f"{host} {path}?{query}".encode()).hexdigest()

    async def get(self, host: str, path: str, params: dict[str, str] | None) -> bytes | None:
        try:
            async with asyncio.timeout(REDIS_TIMEOUT_S):
                value: Any = await self._client.get(self._key(host, path, params))
        except (RedisError, OSError, TimeoutError) as exc:
            log.warning("SEC cache: Redis failed (%s); asking SEC", exc)
            return None
        return value if isinstance(value, bytes) else None

    async def put(self, host: str, path: str, params: dict[str, str] | None, body: bytes) -> None:
        if len(body) > MAX_SHARED_BYTES:
            return
        ttl_ms = int(response_ttl_s(host, path) * 1000)
        try:
            async with asyncio.timeout(REDIS_TIMEOUT_S):
                await self._client.set(self._key(host, path, params), body, px=ttl_ms)
        except (RedisError, OSError, TimeoutError) as exc:
            log.warning("SEC cache: Redis failed (%s); not shared", exc)
