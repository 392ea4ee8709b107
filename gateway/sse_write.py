"""Writing a run's frames to one SSE client: in bounded chunks, with a write deadline.

A backlog goes out in pieces of at most `CHUNK_BYTES` (one frame larger than that goes
alone), so a reader costs one chunk of its own at most, never a copy of the whole log;
aiohttp's `write` waits while the socket's buffer is full, which is the backpressure.
A client that reads nothing for `timeout_s` is dropped: its connection is aborted (its
buffers freed), and the run goes on under the grace rule like any other departure.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from aiohttp import web

CHUNK_BYTES = 64 * 1024


async def write_frames(
    request: web.Request, response: web.StreamResponse,
    frames: Iterable[bytes] | bytes | memoryview, timeout_s: float,
) -> None:  # fmt: skip
    """Frames as a list, or already joined in one buffer (written as slices of it)."""
    if isinstance(frames, bytes | memoryview):
        view = memoryview(frames)
        for start in range(0, len(view), CHUNK_BYTES):
            await write(request, response, view[start : start + CHUNK_BYTES], timeout_s)
        return
    batch: list[bytes] = []
    size = 0
    for frame in frames:
        if batch and size + len(frame) > CHUNK_BYTES:
            await write(request, response, b"".join(batch), timeout_s)
            batch, size = [], 0
        batch.append(frame)
        size += len(frame)
    if batch:
        await write(request, response, batch[0] if len(batch) == 1 else b"".join(batch), timeout_s)


async def write(
    request: web.Request, response: web.StreamResponse, data: bytes | memoryview, timeout_s: float
) -> None:
    """Raise ConnectionResetError if the client is gone or did not read in time."""
    try:
        async with asyncio.timeout(timeout_s):
            await response.write(data)
    except TimeoutError:
        if request.transport is not None:
            request.transport.abort()
        raise ConnectionResetError(f"the client read nothing for {timeout_s:g} s") from None
