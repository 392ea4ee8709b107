"""Writing a run's frames to one SSE client: in bounded chunks, with a write deadline.

A backlog goes out in pieces of at most `CHUNK_BYTES` (one frame larger than that goes
alone), so a reader costs one chunk of its own at most, never a copy of the whole log;
aiohttp's `write` waits while the socket's buffer is full, which is the backpressure.
A client that reads nothing for `timeout_s` is dropped: its connection is aborted (its
buffers freed), and the run goes on under the grace rule like any other departure.

The deadline is one timer per stream, not one per write: a stream writes once per event,
and a timeout context per write (a timer armed and cancelled, the task looked up) was a
measurable share of relaying a paced event. The timer looks at the write in progress
when it fires and re-arms itself for when that write would be late.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from aiohttp import web

from gateway.http import keys

CHUNK_BYTES = 64 * 1024
CHUNK_FRAMING = 16  # what HTTP chunked encoding adds to a write: its size line and CRLF


class SSEWriter:
    """Writes to one client; `close()` when the stream ends."""

    def __init__(
        self, request: web.Request, response: web.StreamResponse, timeout_s: float
    ) -> None:
        self._request = request
        self._response = response
        self._timeout_s = timeout_s
        self._loop = asyncio.get_running_loop()
        self._started: float | None = None  # when the write in progress began
        self._expired = False
        self._timer = self._loop.call_later(timeout_s, self._check)
        # Kept: aiohttp's `request.transport` is a property chain, read once per event
        # otherwise; a transport the client closed says so in `is_closing()`.
        self._transport = transport = request.transport
        self._high_water = transport.get_write_buffer_limits()[1] if transport else 0
        # Set by aiohttp at `prepare` for HTTP/1.1 (a stream has no length); HTTP/1.0
        # streams are sent as they are, ended by closing the connection.
        self._chunked = response.headers.get("Transfer-Encoding") == "chunked"
        self._direct = False  # whether `write_now` may write (the headers were sent)
        self._sent_directly = 0

    def close(self) -> None:
        self._timer.cancel()
        if self._sent_directly:  # for the access log
            self._request[keys.SENT_DIRECTLY] = self._sent_directly

    @property
    def expired(self) -> bool:
        """Whether the client was dropped for reading nothing within the deadline."""
        return self._expired

    def _check(self) -> None:
        started, now = self._started, self._loop.time()
        if started is not None and now - started >= self._timeout_s:
            self._expired = True
            if self._request.transport is not None:
                self._request.transport.abort()  # the pending write fails: connection lost
            return
        due = self._timeout_s if started is None else started + self._timeout_s - now
        self._timer = self._loop.call_later(due, self._check)

    async def write(self, data: bytes | memoryview) -> None:
        """Raise ConnectionResetError if the client is gone or did not read in time."""
        await self._write(data, last=False)

    async def write_last(self, data: bytes) -> None:
        """The stream's last frames (at most `CHUNK_BYTES`) and its end, in one write; as
        `write`, under the deadline."""
        await self._write(data, last=True)

    async def _write(self, data: bytes | memoryview, *, last: bool) -> None:
        if self._expired:
            raise self._late()
        self._started = self._loop.time()
        try:
            if last:
                await self._response.write_eof(bytes(data))
            else:
                await self._response.write(data)
                self._direct = True  # the headers have gone out
        except ConnectionResetError:
            if self._expired:
                raise self._late() from None
            raise
        finally:
            self._started = None

    def write_now(self, data: bytes) -> bool:
        """Write `data` if the socket's buffer takes it without reaching its high-water
        mark, so the write cannot wait (it runs in whatever appends to the run's log: the
        upstream's socket callback, or the run's task, which must never wait on a client);
        False: nothing was written, and the stream's own task writes it.

        Straight to the transport, framed as the response's chunk (aiohttp's writer has
        no call that does not wait): only once aiohttp has sent the headers."""
        transport = self._transport
        if not self._direct or self._expired or transport is None or len(data) > CHUNK_BYTES:
            return False
        if transport.get_write_buffer_size() + len(data) + CHUNK_FRAMING > self._high_water:
            return False
        if transport.is_closing():
            return False
        frame = b"%x\r\n%b\r\n" % (len(data), data) if self._chunked else data
        transport.write(frame)
        self._sent_directly += len(frame)
        return True

    def _late(self) -> ConnectionResetError:
        return ConnectionResetError(f"the client read nothing for {self._timeout_s:g} s")

    async def write_frames(self, frames: Iterable[bytes] | bytes | memoryview) -> None:
        """Frames as a list, or already joined in one buffer (written as slices of it)."""
        if isinstance(frames, bytes | memoryview):
            if len(frames) <= CHUNK_BYTES:  # the usual case: what one event added
                await self.write(frames)
                return
            view = memoryview(frames)
            for start in range(0, len(view), CHUNK_BYTES):
                await self.write(view[start : start + CHUNK_BYTES])
            return
        batch: list[bytes] = []
        size = 0
        for frame in frames:
            if batch and size + len(frame) > CHUNK_BYTES:
                await self.write(b"".join(batch))
                batch, size = [], 0
            batch.append(frame)
            size += len(frame)
        if batch:
            await self.write(batch[0] if len(batch) == 1 else b"".join(batch))
