"""A run's append-only event log, in memory: SSE frames by `seq`, and readers that wait.

Events are serialised once, on append; every reader (the first stream, a re-attach, the
`/api/research` fold) reads the same bytes. The log is bounded: past `max_events` the
oldest tenth is dropped, and a reader asking for those gets what is left.

The frames sit in one growing buffer with an array of their end offsets (8 bytes a frame)
rather than one `bytes` object each (~40 bytes of header and list slot a frame), so an
open stream holds about what it streamed.
"""

from __future__ import annotations

import asyncio
from array import array
from collections.abc import Callable

from orjson import dumps

from gateway.events import Event


class EventLog:
    __slots__ = (
        "_buffer", "_ends", "_waiters", "closed", "first_seq", "listener", "max_events", "run_id",
    )  # fmt: skip

    def __init__(self, run_id: str, max_events: int = 200_000) -> None:
        self.run_id = run_id
        self.max_events = max_events
        self.first_seq = 1
        self.closed = False
        self._buffer = bytearray()
        self._ends = array("Q")  # frame i (seq first_seq + i) ends at _ends[i] in _buffer
        self._waiters: list[asyncio.Future[bool]] = []
        # Called on every append and on close: the Redis mirror marks the run dirty, at the
        # cost of a call, instead of a waiter (a future and a timer) per batch.
        self.listener: Callable[[], None] | None = None

    @property
    def last_seq(self) -> int:
        return self.first_seq + len(self._ends) - 1

    def append(self, event: Event) -> int:
        self.extend([event])
        return self.last_seq

    def extend(self, batch: list[Event]) -> None:
        """Append a batch of events (one upstream read's), then wake the readers once.
        The hot path of every relayed event: kept inline, without a call per event."""
        if self.closed:
            raise RuntimeError("append to a closed event log")
        run_id, buffer, ends = self.run_id, self._buffer, self._ends
        seq = self.first_seq + len(ends)
        for event in batch:
            event["run_id"] = run_id
            event["seq"] = seq
            buffer += b"id: %d\ndata: %b\n\n" % (seq, dumps(event))  # as `sse.frame`
            ends.append(len(buffer))
            seq += 1
        if len(ends) > self.max_events:
            self._drop(max(len(ends) - self.max_events, self.max_events // 10))
        if self._waiters:
            self._wake()
        if self.listener is not None:
            self.listener()

    def close(self) -> None:
        self.closed = True
        self._wake()
        if self.listener is not None:
            self.listener()

    def since(self, after_seq: int) -> list[bytes]:
        """Frames with `seq > after_seq` that are still kept, one `bytes` each."""
        index = max(0, after_seq + 1 - self.first_seq)
        ends = self._ends
        if index >= len(ends):
            return []
        start = ends[index - 1] if index else 0
        with memoryview(self._buffer) as view:
            frames = []
            for end in ends[index:]:
                frames.append(bytes(view[start:end]))
                start = end
        return frames

    def read(self, after_seq: int) -> bytes:
        """The same frames as `since`, as one `bytes` (one copy; what a stream writes)."""
        index = max(0, after_seq + 1 - self.first_seq)
        if index >= len(self._ends):
            return b""
        start = self._ends[index - 1] if index else 0
        with memoryview(self._buffer) as view:
            return bytes(view[start:])

    def _drop(self, count: int) -> None:
        cut = self._ends[count - 1]
        del self._buffer[:cut]
        self._ends = array("Q", [end - cut for end in self._ends[count:]])
        self.first_seq += count

    async def wait(self, heartbeat_s: float) -> bool:
        """Until the log grows or closes (True), or `heartbeat_s` passes (False)."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[bool] = loop.create_future()
        self._waiters.append(waiter)
        timer = loop.call_later(heartbeat_s, _resolve, waiter, False)
        try:
            return await waiter
        finally:
            timer.cancel()
            if waiter in self._waiters:  # timed out or cancelled: nobody woke it
                self._waiters.remove(waiter)

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            _resolve(waiter, True)


def _resolve(waiter: asyncio.Future[bool], value: bool) -> None:
    if not waiter.done():
        waiter.set_result(value)
