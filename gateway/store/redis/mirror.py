"""Copies every owned run's in-memory log to its Redis stream (see `runs`).

One flusher per process: a run's log marks its mirror dirty on each append, and every
FLUSH_INTERVAL_S one script call carries the new frames (and checkpoints) of every dirty
run. Round trips are then a function of time, not of events or runs: batches per run cost
a round trip per event at a human pace, 2.13x the owner's CPU per relayed event against no
Redis in bench case 7; one call per process brought that to about 1.2-1.3x.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gateway.errors import GatewayError
from gateway.store.eventlog import EventLog
from gateway.store.redis.wire import OP_TIMEOUT_S, REDIS_ERRORS, RUNNING_TTL_S, Batch

if TYPE_CHECKING:
    from gateway.store.redis.runs import RedisStore

log = logging.getLogger(__name__)

FLUSH_INTERVAL_S = 0.010  # how long a new frame may wait for others to share its round trip
FLUSH_MAX = 1024  # frames of one run per write: a longer backlog goes in back-to-back calls
RETRY_S = 0.5  # between flush attempts while Redis fails
KEEPALIVE_S = 60.0  # a quiet run refreshes that TTL this often


CURSOR_LAG_S = 0.5
"""How long a cursor past a running run's last seq in Redis waits for the mirror (a flush
behind the owner, which may have streamed it already) before it is past the end."""


REPLAY_FRAMES = 512
"""Frames a reader on another process takes from Redis at a time while it replays a
backlog (~80 KB of SSE for a model's deltas): its window. `follow` reads 4,096 a time,
a few MB of parsed reply held by a reader that may read nothing (50 silent re-attaches of
a 6 MB run took 286 MB that way)."""


async def backlog(
    store: RedisStore, run_id: str, after: int, last: int
) -> AsyncGenerator[tuple[bytes, int, bool], None]:
    """The frames after seq `after` up to `last`, REPLAY_FRAMES at a time: each window's
    frames, its last seq, and whether that was the run's terminal frame. Redis failing
    ends it early: `follow` goes on from the seq reached, and rides that out."""
    key = store.events_key(run_id)
    while after < last:
        try:
            async with asyncio.timeout(OP_TIMEOUT_S):
                entries: Any = await store.client.xrange(key, f"({after}-0", count=REPLAY_FRAMES)
        except REDIS_ERRORS:
            return
        if not entries:
            return
        after = int(entries[-1][0].split(b"-")[0])
        end = b"end" in entries[-1][1]
        yield b"".join(fields[b"f"] for _, fields in entries), after, end
        if end:
            return


async def position(store: RedisStore, run_id: str, after: int) -> tuple[str, int] | None:
    """A run's status and last seq in the shared store (None: unknown there), for a reader
    that starts after seq `after`; a 502 if Redis does not answer."""
    key = store.run_key(run_id)
    deadline = time.monotonic() + CURSOR_LAG_S
    try:
        while True:
            async with asyncio.timeout(OP_TIMEOUT_S):
                reply: Any = await store.client.hmget(key, ["status", "last"])
            status, last = reply[0], int(reply[1] or 0)
            if status is None:
                return None
            if after <= last or status != b"running" or time.monotonic() >= deadline:
                return status.decode(), last
            await asyncio.sleep(FLUSH_INTERVAL_S)
    except REDIS_ERRORS as exc:
        message = f"The shared run store does not answer ({type(exc).__name__})"
        raise GatewayError("NETWORK_ERROR", message) from exc


@dataclass(eq=False)
class Mirror:
    """One run's position in Redis: frames up to `flushed` are known to be there."""

    run_id: str
    session_id: str
    log: EventLog
    token: int = 0
    """The run's fencing token (0: not durable); a write with a stale one is refused."""
    flushed: int = 0
    checkpoint: tuple[int, bytes] | None = None
    """The newest checkpoint not yet written, and the seq it was taken at."""

    def pending(self) -> Batch:
        """The next write: the frames after `flushed` (at most FLUSH_MAX; none refreshes
        the TTLs), the last one terminal if it ends the log."""
        log_ = self.log
        first = max(self.flushed + 1, log_.first_seq)
        frames = log_.since(self.flushed)[:FLUSH_MAX]
        end = log_.closed and first + len(frames) - 1 == log_.last_seq
        checkpoint = b""
        if self.checkpoint is not None and self.checkpoint[0] < first + len(frames):
            checkpoint = self.checkpoint[1]  # its frames go in the same call, before it
        return Batch(self.run_id, self.session_id, first, frames, end, self.token, checkpoint)


class Flusher:
    """The process's one writer: every dirty run's frames in one script call per tick."""

    def __init__(self, store: RedisStore) -> None:
        self._store = store
        self._mirrors: dict[str, Mirror] = {}
        self._dirty: dict[str, Mirror] = {}
        self._wake = asyncio.Event()
        self._all_ended = asyncio.Event()
        self._all_ended.set()
        self._new = False  # a run was added: its record goes at once, without the wait
        self._backlog = False  # a run has more than one write's worth: no wait either
        self._last_ok = time.monotonic()
        self._keepalive_at = time.monotonic() + KEEPALIVE_S
        self.healthy = True
        self.task = asyncio.create_task(self._run())

    def add(self, run_id: str, session_id: str, event_log: EventLog, token: int = 0) -> Mirror:
        """Mirror a run from now until its terminal frame is in Redis."""
        mirror = Mirror(run_id, session_id, event_log, token, event_log.first_seq - 1)
        self._mirrors[run_id] = mirror
        self._all_ended.clear()
        event_log.listener = lambda: self._mark(mirror)
        self._new = True  # the record at once: the run is known everywhere
        self._mark(mirror)
        return mirror

    def fence(self, run_id: str, token: int) -> None:
        mirror = self._mirrors.get(run_id)
        if mirror is not None:
            mirror.token = token

    def checkpoint(self, run_id: str, seq: int, data: bytes) -> None:
        mirror = self._mirrors.get(run_id)
        if mirror is not None:
            mirror.checkpoint = (seq, data)
            self._mark(mirror)

    @property
    def pending(self) -> int:
        return len(self._dirty)

    async def drain(self, timeout_s: float) -> None:
        """While Redis answers: until every run's terminal frame is written, or `timeout_s`."""
        if self.healthy:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout_s):
                    await self._all_ended.wait()

    def _mark(self, mirror: Mirror) -> None:
        self._dirty[mirror.run_id] = mirror
        if not self._wake.is_set():
            self._wake.set()

    async def _run(self) -> None:
        while True:
            try:
                async with asyncio.timeout(self._until_keepalive()):
                    await self._wake.wait()
                if not self._new and not self._backlog:
                    await asyncio.sleep(FLUSH_INTERVAL_S)  # let a burst share the round trip
            except TimeoutError:
                self._keepalive()
            self._wake.clear()
            self._new = self._backlog = False
            if not await self._tick():
                await asyncio.sleep(RETRY_S)  # the runs go on; their frames wait in memory

    def _until_keepalive(self) -> float:
        return max(0.0, self._keepalive_at - time.monotonic())

    def _keepalive(self) -> None:
        """Quiet running runs refresh their TTL (an empty write does)."""
        self._keepalive_at = time.monotonic() + KEEPALIVE_S
        for mirror in self._mirrors.values():
            self._mark(mirror)

    async def _tick(self) -> bool:
        """One pipeline for every dirty run; False if Redis failed."""
        dirty, self._dirty = self._dirty, {}
        if not dirty:
            return True
        mirrors = list(dirty.values())
        batches = [mirror.pending() for mirror in mirrors]
        try:
            async with asyncio.timeout(OP_TIMEOUT_S):
                refused = await self._store.write(batches)
        except REDIS_ERRORS as exc:
            self._failed(mirrors, exc)
            return False
        except Exception as exc:  # a bug: keep the runs dirty, their frames must still go
            log.exception("run store: the flusher failed")
            self._failed(mirrors, exc)
            return False
        self._ok()
        for position, (mirror, batch) in enumerate(zip(mirrors, batches, strict=True)):
            self._written(mirror, batch, refused=position in refused)
        return True

    def _written(self, mirror: Mirror, batch: Batch, *, refused: bool) -> None:
        if refused:  # another worker took the run over: this one must stop
            self._drop(mirror)
            self._store.refused(mirror.run_id)
        elif batch.end:
            self._drop(mirror)
        else:
            mirror.flushed = batch.first + len(batch.frames) - 1
            self._backlog = self._backlog or len(batch.frames) == FLUSH_MAX
            if batch.checkpoint and mirror.checkpoint and mirror.checkpoint[1] is batch.checkpoint:
                mirror.checkpoint = None
            if mirror.flushed < mirror.log.last_seq or mirror.log.closed:
                self._mark(mirror)

    def _drop(self, mirror: Mirror) -> None:
        self._mirrors.pop(mirror.run_id, None)
        mirror.log.listener = None
        if not self._mirrors:
            self._all_ended.set()

    def _failed(self, mirrors: list[Mirror], exc: BaseException) -> None:
        if self.healthy:
            log.warning("run store: cannot write to Redis (%s); the run goes on in memory", exc)
            self.healthy = False
        self._store.note_error(exc)
        gone = time.monotonic() - self._last_ok > RUNNING_TTL_S
        for mirror in mirrors:
            if gone and mirror.log.closed:  # its keys expired meanwhile: nothing left to fix
                self._drop(mirror)
            else:
                self._dirty.setdefault(mirror.run_id, mirror)
        self._wake.set()

    def _ok(self) -> None:
        if not self.healthy:
            log.info("run store: writing to Redis again")
            self.healthy = True
        self._store.note_ok()
        self._last_ok = time.monotonic()
