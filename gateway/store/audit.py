"""Where audit lines go besides the file: a sink takes batches of JSON lines.

AuditSink       the interface `ops/audit.py` writes through
MemoryAudit     the lines of one process, newest last (bounded): tests, a look at recent
                admin actions
RedisAudit      a Redis stream every replica adds to (`store/redis/audit.py`)
"""

from __future__ import annotations

from collections import deque
from typing import Protocol


class AuditSink(Protocol):
    errors: tuple[type[BaseException], ...]
    """What a failing sink raises that is expected (a lost connection): logged briefly."""

    async def add(self, lines: list[bytes]) -> None:
        """Append the lines, in order."""

    async def close(self) -> None: ...


class MemoryAudit:
    """The last `maxlen` lines, in this process."""

    errors: tuple[type[BaseException], ...] = ()

    def __init__(self, maxlen: int = 10_000) -> None:
        self.lines: deque[bytes] = deque(maxlen=maxlen)

    async def add(self, lines: list[bytes]) -> None:
        self.lines.extend(lines)

    async def close(self) -> None:
        pass
