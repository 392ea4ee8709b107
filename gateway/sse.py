"""SSE framing only: `id:` line, one `data:` line of JSON, a blank line; `: ping` comments."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
    "Connection": "keep-alive",
}
PING = b": ping\n\n"


def frame(seq: int, event: Mapping[str, Any]) -> bytes:
    # orjson escapes every newline inside strings, so one `data:` line always suffices.
    return b"id: %d\ndata: %b\n\n" % (seq, orjson.dumps(event))


def parse_frames(data: bytes) -> list[dict[str, Any]]:
    """The JSON events in SSE bytes written by `frame` (comments skipped)."""
    found = []
    for block in data.split(b"\n\n"):
        for line in block.split(b"\n"):
            if line.startswith(b"data: "):
                found.append(orjson.loads(line[6:]))
    return found
