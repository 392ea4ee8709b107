"""A run's append-only event log, in memory: SSE frames by `seq`, and readers that wait.

Events are serialised once, on append; every reader (the first stream, a re-attach, the
`/api/research` fold) reads the same bytes. The log is bounded: past `max_events` the
oldest tenth is dropped, and a reader asking for those gets what is left.

The newest frames sit in one growing buffer with an array of their end offsets (8 bytes
a frame) rather than one `bytes` object each (~40 bytes of header and list slot a frame).
Older frames are kept compressed, `BLOCK` frames a block (LZ4: about a fifth of the size;
every frame repeats the event's keys and the run id), so an open stream holds about a
fifth of what it streamed: the log was the largest part of a stream's memory. Live
readers read the newest frames, which are never compressed; a re-attach from further
back, or a reader that fell behind, pays a decompression (~3 us a block), one `window`
of blocks at a time.
"""

from __future__ import annotations

import asyncio
from array import array
from collections.abc import Callable

import lz4.block
from orjson import dumps

from gateway.events import Event

Push = Callable[[bytes], bool]
"""Writes frames to a client if it can without waiting; False: not written."""

BLOCK = 32
"""Frames a compressed block holds (LZ4 needs a few KB to find the repeats)."""
HOT_SLACK = 2
"""Newest frames never compressed: what live readers have yet to take."""
_FRAME_END = b"\n\n"  # no frame has it inside: its JSON is one line


class EventLog:
    __slots__ = (
        "_buffer",
        "_cold",
        "_ends",
        "_first_seq",
        "_hot_seq",
        "_pushing",
        "_waiters",
        "closed",
        "listener",
        "max_events",
        "run_id",
    )

    def __init__(self, run_id: str, max_events: int = 200_000) -> None:
        self.run_id = run_id
        self.max_events = max_events
        self._first_seq = 1
        self.closed = False
        self._cold: list[bytes] = []  # compressed blocks of BLOCK frames, oldest first
        self._hot_seq = 1  # the seq of the first frame in `_buffer`
        self._buffer = bytearray()
        self._ends = array("Q")  # frame i (seq _hot_seq + i) ends at _ends[i] in _buffer
        self._waiters: list[asyncio.Future[bool]] = []
        self._pushing: list[Follower] = []  # followers written to on append (`push`)
        # Called on every append and on close: the Redis mirror marks the run dirty, at the
        # cost of a call, instead of a waiter (a future and a timer) per batch.
        self.listener: Callable[[], None] | None = None

    @property
    def first_seq(self) -> int:
        return self._first_seq

    @first_seq.setter
    def first_seq(self, seq: int) -> None:
        """Where an empty log starts (a resumed run goes on from the seq it had)."""
        if self._ends or self._cold:
            raise RuntimeError("the first seq of a log is set before anything is appended")
        self._first_seq = self._hot_seq = seq

    @property
    def hot_seq(self) -> int:
        """The seq of the oldest frame not compressed: a reader after `hot_seq - 1` or
        later reads without decompressing (`read`); one further back reads `window`s."""
        return self._hot_seq

    @property
    def last_seq(self) -> int:
        return self._hot_seq + len(self._ends) - 1

    def append(self, event: Event) -> int:
        self.extend([event])
        return self.last_seq

    def extend(self, batch: list[Event], *, push: bool = False) -> None:
        """Append a batch of events (one upstream read's), then wake the readers once.
        The hot path of every relayed event: kept inline, without a call per event.
        `push`: write the batch to the followers that take frames as they are appended
        (`Follower`), there and then; otherwise they are woken to read, like the other
        readers (the terminal event goes with the stream's end, in the stream's task)."""
        if self.closed:
            raise RuntimeError("append to a closed event log")
        if len(self._ends) >= BLOCK + HOT_SLACK:  # before the batch: it stays uncompressed
            self._cool()
        run_id, buffer, ends = self.run_id, self._buffer, self._ends
        seq = self._hot_seq + len(ends)
        for event in batch:
            event["run_id"] = run_id
            event["seq"] = seq
            buffer += b"id: %d\ndata: %b\n\n" % (seq, dumps(event))  # as `sse.frame`
            ends.append(len(buffer))
            seq += 1
        if seq - self._first_seq > self.max_events:
            kept = seq - self._first_seq
            self._drop(max(kept - self.max_events, self.max_events // 10))
        if self._waiters:
            self._wake()
        if self._pushing:
            if push:
                for follower in self._pushing[:]:
                    follower._push_new()
            else:
                self._release_followers()
        if self.listener is not None:
            self.listener()

    def _cool(self) -> None:
        """Compress the oldest frames, whole blocks of them, leaving HOT_SLACK at least."""
        ends = self._ends
        blocks = (len(ends) - HOT_SLACK) // BLOCK
        cut = ends[blocks * BLOCK - 1]
        with memoryview(self._buffer) as view:
            start = 0
            for index in range(BLOCK - 1, blocks * BLOCK, BLOCK):
                self._cold.append(lz4.block.compress(view[start : ends[index]]))
                start = ends[index]
        self._buffer = self._buffer[cut:]  # a fresh buffer: the old one's size goes too
        self._ends = array("Q", [end - cut for end in ends[blocks * BLOCK :]])
        self._hot_seq += blocks * BLOCK

    def close(self) -> None:
        self.closed = True
        self._wake()
        self._release_followers()
        if self.listener is not None:
            self.listener()

    def _release_followers(self) -> None:
        for follower in self._pushing[:]:
            follower._release(True)

    def since(self, after_seq: int) -> list[bytes]:
        """Frames with `seq > after_seq` that are still kept, one `bytes` each."""
        after_seq = max(after_seq, self._first_seq - 1)
        frames: list[bytes] = []
        if after_seq + 1 < self._hot_seq:  # some are compressed: split them back into frames
            cold = self._cold_after(after_seq).split(_FRAME_END)
            frames = [frame + _FRAME_END for frame in cold[:-1]]  # the last piece is empty
        index = max(0, after_seq + 1 - self._hot_seq)
        ends = self._ends
        if index < len(ends):
            start = ends[index - 1] if index else 0
            with memoryview(self._buffer) as view:
                for end in ends[index:]:
                    frames.append(bytes(view[start:end]))
                    start = end
        return frames

    def read(self, after_seq: int) -> bytes:
        """The same frames as `since`, as one `bytes` (one copy; what a stream writes)."""
        index = after_seq + 1 - self._hot_seq
        if index < 0:  # from the compressed blocks: a re-attach, or a reader behind
            after_seq = max(after_seq, self._first_seq - 1)
            return self._cold_after(after_seq) + self._buffer
        if index >= len(self._ends):
            return b""
        start = self._ends[index - 1] if index else 0
        with memoryview(self._buffer) as view:
            return bytes(view[start:])

    def window(self, after_seq: int, limit: int) -> tuple[bytes, int]:
        """Whole frames with `seq > after_seq`, about `limit` bytes of them (one block or
        frame at least), and the seq of the last: a backlog a window at a time, so a
        reader holds that much of the log, not a copy of it. Only the compressed blocks
        the window takes are decompressed."""
        after_seq = max(after_seq, self._first_seq - 1)
        if after_seq + 1 >= self._hot_seq:  # the newest frames: a few blocks' worth at most
            return self.read(after_seq), self.last_seq
        cold_seq = self._hot_seq - BLOCK * len(self._cold)
        index = (after_seq + 1 - cold_seq) // BLOCK
        skip = after_seq + 1 - (cold_seq + index * BLOCK)  # frames of the first block
        parts: list[bytes] = []
        size = 0
        while index < len(self._cold) and size < limit:
            part = lz4.block.decompress(self._cold[index])
            if skip:
                offset = 0
                for _ in range(skip):
                    offset = part.index(_FRAME_END, offset) + 2
                part, skip = part[offset:], 0
            parts.append(part)
            size += len(part)
            index += 1
        return b"".join(parts), cold_seq + index * BLOCK - 1

    def _cold_after(self, after_seq: int) -> bytes:
        """The compressed frames with `seq > after_seq`, decompressed, as one `bytes`."""
        cold_seq = self._hot_seq - BLOCK * len(self._cold)
        if after_seq + 1 >= self._hot_seq:
            return b""
        first = (after_seq + 1 - cold_seq) // BLOCK
        parts = [lz4.block.decompress(block) for block in self._cold[first:]]
        skip = after_seq + 1 - (cold_seq + first * BLOCK)  # frames of the first block
        if skip:
            offset = 0
            for _ in range(skip):
                offset = parts[0].index(_FRAME_END, offset) + 2
            parts[0] = parts[0][offset:]
        return b"".join(parts)

    def _drop(self, count: int) -> None:
        self._first_seq += count
        # Whole compressed blocks before the first kept seq go; a block cut across stays,
        # its dropped frames skipped on reading.
        cold_seq = self._hot_seq - BLOCK * len(self._cold)
        gone = min(len(self._cold), (self._first_seq - cold_seq) // BLOCK)
        del self._cold[:gone]
        hot = self._first_seq - self._hot_seq  # frames to drop from the hot part
        if hot > 0:
            cut = self._ends[hot - 1]
            del self._buffer[:cut]
            self._ends = array("Q", [end - cut for end in self._ends[hot:]])
            self._hot_seq += hot

    def follow(self, heartbeat_s: float) -> Follower:
        """A stream that follows this log live (`Follower`)."""
        return Follower(self, heartbeat_s)

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            _resolve(waiter, True)


class Follower:
    """One stream's waits on a log while it follows it live.

    `wait(after, push)` is a future: True when the stream should read the log again (it
    grew or closed, or `push` could not write), False once `heartbeat_s` passed with
    nothing for the client (time for a ping). With `push`, each batch the run relays
    (`extend(..., push=True)`) is handed to `push`, which writes it to the client there
    and then when the socket takes it without waiting; `after` is the last seq written.
    A model's event then wakes no task at all on its way from the upstream's socket to
    the client's (the upstream's callback appends it); a client that is slow or gone
    sends the stream back to reading and waiting on its own.

    One heartbeat timer for the whole stream, not one per wait: it looks at the wait in
    progress when it fires and re-arms itself for when that wait would reach
    `heartbeat_s`. `close()` when the stream ends."""

    __slots__ = ("_heartbeat_s", "_log", "_loop", "_push", "_since", "_timer", "_waiter", "after")

    def __init__(self, log: EventLog, heartbeat_s: float) -> None:
        self._log = log
        self._heartbeat_s = heartbeat_s
        self._loop = asyncio.get_running_loop()
        self._waiter: asyncio.Future[bool] | None = None
        self._push: Push | None = None
        self._since = 0.0  # when the wait began, or the last push
        self.after = 0
        self._timer = self._loop.call_later(heartbeat_s, self._check)

    def wait(self, after: int, push: Push | None = None) -> asyncio.Future[bool]:
        waiter = self._waiter = self._loop.create_future()
        self._since = self._loop.time()
        self.after = after
        self._push = push
        if push is None:
            self._log._waiters.append(waiter)
        else:
            self._log._pushing.append(self)
        return waiter

    def close(self) -> None:
        self._timer.cancel()
        self._forget()

    def _push_new(self) -> None:
        log, push = self._log, self._push
        data = log.read(self.after)
        if not data or push is None:
            return
        if push(data):
            self.after = log.last_seq
            self._since = self._loop.time()
        else:
            self._release(True)

    def _release(self, value: bool) -> None:
        waiter = self._waiter
        self._forget()
        if waiter is not None:
            _resolve(waiter, value)

    def _check(self) -> None:
        waiter, due = self._waiter, self._heartbeat_s
        if waiter is not None and not waiter.done():
            waited = self._loop.time() - self._since
            if waited >= self._heartbeat_s:
                self._release(False)
            else:
                due -= waited
        self._timer = self._loop.call_later(due, self._check)

    def _forget(self) -> None:
        waiter, self._waiter = self._waiter, None
        log = self._log
        if waiter is not None and waiter in log._waiters:
            log._waiters.remove(waiter)
        if self in log._pushing:
            log._pushing.remove(self)
        self._push = None


def _resolve(waiter: asyncio.Future[bool], value: bool) -> None:
    if not waiter.done():
        waiter.set_result(value)
