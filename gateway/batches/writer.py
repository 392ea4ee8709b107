"""One batch's journal writes, in order, each tried until the store answers; the first
one refused (the batch's token is stale: it was taken over) stops them all. A write the
store can never take (a value it cannot encode: a bug) is not tried again: its waiter
hears of it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

RETRY_S = (0.1, 5.0)
"""A write the store failed is tried again, after 0.1 s, doubling up to 5 s, until it is
answered (or refused)."""

Errors = tuple[type[BaseException], ...]


class JournalLost(Exception):
    """The store refused a write of the batch: another worker drives it now."""


Write = Callable[[], Awaitable[bool]]


class Writer:
    """One batch's writes, in order, each tried until the store answers."""

    def __init__(
        self,
        batch_id: str,
        errors: Errors,
        on_lost: Callable[[str], None],
        *,
        faults: Errors = (),
    ) -> None:
        self._errors = errors
        self._faults = faults
        self._on_lost = on_lost
        self._batch_id = batch_id
        self._queue: asyncio.Queue[tuple[Write, asyncio.Future[None] | None]] = asyncio.Queue()
        self._task = asyncio.create_task(self._run())
        self._lost = False

    def abandon(self) -> None:
        """The batch is lost: no write more; those waiting fail with `JournalLost`."""
        self._lost = True
        self._task.cancel()
        while not self._queue.empty():
            _, done = self._queue.get_nowait()
            self._queue.task_done()
            self._fail(done)

    def put(self, write: Write, *, wait: bool = False) -> asyncio.Future[None] | None:
        done = asyncio.get_running_loop().create_future() if wait else None
        if self._lost:
            self._fail(done)
            return done
        self._queue.put_nowait((write, done))
        return done

    async def drained(self) -> None:
        await self._queue.join()

    async def close(self) -> None:
        self.abandon()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _run(self) -> None:
        while True:
            write, done = await self._queue.get()
            try:
                written = not self._lost and await self._answered(write)
            except asyncio.CancelledError:
                self._fail(done)
                raise
            except Exception as exc:  # a bug: its waiter hears of it, the next write goes on
                log.exception("batches: a write of %s failed", self._batch_id)
                if done is not None and not done.done():
                    done.set_exception(exc)
                continue
            finally:
                self._queue.task_done()
            if not written:
                self._fail(done)
                if not self._lost:  # refused now, not a write queued behind the refusal
                    self._lost = True
                    self._on_lost(self._batch_id)
            elif done is not None and not done.done():
                done.set_result(None)

    def _fail(self, done: asyncio.Future[None] | None) -> None:
        if done is not None and not done.done():
            done.set_exception(JournalLost(self._batch_id))

    async def _answered(self, write: Write) -> bool:
        delay, most = RETRY_S
        errors, faults = self._errors, self._faults
        while True:
            try:
                return await write()
            except faults:  # of `errors`, but no retry mends it
                raise
            except errors as exc:
                log.warning("batches: cannot write %s (%s); trying again", self._batch_id, exc)
                await asyncio.sleep(delay)
                delay = min(most, delay * 2)
