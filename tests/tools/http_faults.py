"""Answers a careless or hostile server gives, for the fake SEC and the fake Exa: a body
that never ends (chunked, no length), one that declares a huge length, and a small gzip
body that inflates to megabytes. Each notes when the client hung up on it."""

from __future__ import annotations

import asyncio
import gzip
from dataclasses import dataclass, field
from typing import Literal

from aiohttp import web

BodyFault = Literal["endless", "declared_huge", "gzip_bomb"]
CHUNK = b"[" + b" " * (64 * 1024 - 1)  # JSON-ish, never valid: it must not be parsed
MAX_WRITE = 1 << 30  # a client that never stops reading still ends the test
INFLATED = 8 << 20


@dataclass
class HangUps:
    """Bodies the client stopped reading before their end."""

    count: int = 0
    event: asyncio.Event = field(default_factory=asyncio.Event)

    def note(self) -> None:
        self.count += 1
        self.event.set()


async def body_fault(
    request: web.Request, fault: BodyFault, hang_ups: HangUps, content_type: str
) -> web.StreamResponse:
    if fault == "gzip_bomb":
        body = gzip.compress(b" " * INFLATED)  # ~8 kB on the wire
        headers = {"Content-Encoding": "gzip", "Content-Type": content_type}
        return web.Response(body=body, headers=headers)
    response = web.StreamResponse(headers={"Content-Type": content_type})
    if fault == "declared_huge":
        response.content_length = 1 << 40
    await response.prepare(request)
    written = 0
    try:
        while written < MAX_WRITE:
            await response.write(CHUNK)
            written += len(CHUNK)
    except (ConnectionError, asyncio.CancelledError):
        hang_ups.note()
        raise
    return response
