"""HTTP as every live tool backend uses it: one session that honours the environment's
proxy, bodies read up to a cap, and servers' `Retry-After` read into a bounded wait."""

from __future__ import annotations

import time
from email.utils import parsedate_to_datetime

import aiohttp

__all__ = ["BodyTooLarge", "open_session", "read_capped", "retry_after_s"]

READ_CHUNK = 1 << 16


class BodyTooLarge(Exception):
    """The answer is longer than the caller's cap; the connection was closed unread."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"over {limit:,} bytes")
        self.limit = limit


def open_session() -> aiohttp.ClientSession:
    """The tools' session: `HTTP(S)_PROXY` and `NO_PROXY` honoured, as the model calls do."""
    return aiohttp.ClientSession(trust_env=True)


async def read_capped(resp: aiohttp.ClientResponse, limit: int) -> bytes:
    """The (decoded) body, or `BodyTooLarge` as soon as it passes `limit` bytes: a declared
    length is refused before reading, an undeclared or compressed one while it arrives."""
    if resp.content_length is not None and resp.content_length > limit:
        resp.close()
        raise BodyTooLarge(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_chunked(READ_CHUNK):
        size += len(chunk)
        if size > limit:
            resp.close()  # the rest stays unread: the connection cannot be reused
            raise BodyTooLarge(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def retry_after_s(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds a `Retry-After` header asks for (delay-seconds or an HTTP-date), or None when
    it is absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; "-0000" parses without a zone
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
