"""Copies one run's in-memory log to its Redis stream in batches (see `redis_store`)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from gateway.eventlog import EventLog
from gateway.redis_store import (
    FLUSH_INTERVAL_S,
    FLUSH_MAX,
    KEEPALIVE_S,
    OP_TIMEOUT_S,
    REDIS_ERRORS,
    RETRY_S,
    RUNNING_TTL_S,
)

if TYPE_CHECKING:
    from gateway.redis_store import RedisStore

log = logging.getLogger(__name__)


class LogMirror:
    """Copies one run's log to its stream in batches, until the terminal frame is there."""

    def __init__(
        self, store: RedisStore, run_id: str, session_id: str, event_log: EventLog
    ) -> None:
        self._store = store
        self._log = event_log
        self._run_id = run_id
        self._session_id = session_id
        self._key = store.events_key(run_id)
        self._flushed: int | None = 0  # last seq in the stream; None: unknown after a failure
        self._last_ok = time.monotonic()
        self.healthy = True
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        try:
            await self._guard(self._flush)  # the record at once: the run is known everywhere
            while await self._step():
                pass
        except Exception:  # a bug here must not end the run: it goes on in memory
            log.exception("run store: mirror of %s failed", self._key)

    async def _step(self) -> bool:
        """One transaction, after waiting for frames (or a keep-alive); False when done."""
        log_, flushed = self._log, self._flushed
        if flushed is not None and flushed == log_.last_seq:  # nothing pending
            if log_.closed:
                return False
            grew = await log_.wait(KEEPALIVE_S)
            if grew and not log_.closed and log_.last_seq - flushed < FLUSH_MAX:
                await asyncio.sleep(FLUSH_INTERVAL_S)  # let a burst share the round trip
        closed = log_.closed
        if await self._guard(self._flush):
            return True
        if closed and time.monotonic() - self._last_ok > RUNNING_TTL_S:
            return False  # Redis stayed away until the keys expired: nothing left to fix
        await asyncio.sleep(RETRY_S)  # the run goes on; its frames wait in memory
        return True

    async def _guard(self, operation: Callable[[], Awaitable[None]]) -> bool:
        try:
            async with asyncio.timeout(OP_TIMEOUT_S):
                await operation()
        except REDIS_ERRORS as exc:
            if self.healthy:
                log.warning("run store: cannot write %s (%s); the run goes on in memory",
                            self._key, exc)  # fmt: skip
            self.healthy, self._flushed = False, None
            return False
        if not self.healthy:
            log.info("run store: writing %s again", self._key)
            self.healthy = True
        self._last_ok = time.monotonic()
        return True

    async def _flush(self) -> None:
        store, log_ = self._store, self._log
        if self._flushed is None:  # a failed call may have been applied after all
            top: Any = await store.client.xrevrange(self._key, "+", "-", count=1)
            self._flushed = int(top[0][0].split(b"-")[0]) if top else 0
        first = max(self._flushed + 1, log_.first_seq)
        frames = log_.since(self._flushed)[:FLUSH_MAX]
        end = log_.closed and first + len(frames) - 1 == log_.last_seq
        await store.append(self._run_id, self._session_id, first, frames, end=end)
        self._flushed = first + len(frames) - 1
