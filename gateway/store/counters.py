"""Per-key limit counters, the store side of `access/limits.py`: what a counter store
answers (a refusal, or the start counted in its window) and the counters of one process.
`store/redis/limits.py` holds the counters every replica shares.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal, Protocol

LimitName = Literal["per_minute", "concurrent", "daily_tokens"]
WINDOW_S = 60.0
CONCURRENT_RETRY_S = 1.0  # nobody knows when a run ends; ask the client to look again soon


@dataclass(frozen=True)
class Limits:
    """The configured limits; 0 means no limit."""

    per_minute: int = 0
    concurrent: int = 0
    daily_tokens: int = 0

    @property
    def active(self) -> bool:
        return bool(self.per_minute or self.concurrent or self.daily_tokens)


@dataclass(frozen=True)
class Refusal:
    limit: LimitName
    retry_after_s: float


@dataclass(frozen=True)
class Window:
    """A key's per-minute window once a start was counted in it: the starts in it, and how
    soon the oldest of them leaves it."""

    used: int
    reset_s: float


class Counters(Protocol):
    async def take(self, name: str, ticket: str, limits: Limits) -> Refusal | Window | None:
        """Check every limit and, if none refuses, count the start and hold a slot (None:
        let through without knowing, when the counters' store does not answer)."""

    async def settle(self, name: str, ticket: str, tokens: int) -> None:
        """Free the run's slot and charge its tokens to today."""

    async def close(self) -> None: ...


def utc_day(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).date().isoformat()


def seconds_to_midnight(now: float) -> float:
    moment = datetime.fromtimestamp(now, UTC)
    midnight = datetime.combine(moment.date() + timedelta(days=1), datetime.min.time(), UTC)
    return (midnight - moment).total_seconds()


class MemoryCounters:
    """The counters of one process. The window is timed by `monotonic` (a wall clock set
    back an hour would hold a key's starts in the window for that hour), the UTC day by
    `clock`; tests pass their own."""

    def __init__(
        self,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self._monotonic = monotonic
        self._starts: dict[str, deque[float]] = {}  # name: its starts in the last minute
        self._slots: dict[str, set[str]] = {}
        self._tokens: dict[str, tuple[str, int]] = {}  # name: (UTC day, tokens)

    async def take(self, name: str, ticket: str, limits: Limits) -> Refusal | Window:
        now = self._clock()
        day, used = self._tokens.get(name, ("", 0))
        if limits.daily_tokens and day == utc_day(now) and used >= limits.daily_tokens:
            return Refusal("daily_tokens", seconds_to_midnight(now))
        slots = self._slots.setdefault(name, set())
        if limits.concurrent and len(slots) >= limits.concurrent:
            return Refusal("concurrent", CONCURRENT_RETRY_S)
        window = Window(0, WINDOW_S)
        if limits.per_minute:
            at = self._monotonic()
            starts = self._starts.setdefault(name, deque())
            while starts and starts[0] <= at - WINDOW_S:
                starts.popleft()
            if len(starts) >= limits.per_minute:
                return Refusal("per_minute", starts[0] + WINDOW_S - at)
            starts.append(at)
            window = Window(len(starts), starts[0] + WINDOW_S - at)
        slots.add(ticket)
        return window

    async def settle(self, name: str, ticket: str, tokens: int) -> None:
        self._slots.get(name, set()).discard(ticket)
        today = utc_day(self._clock())
        day, used = self._tokens.get(name, (today, 0))
        self._tokens[name] = (today, (used if day == today else 0) + tokens)

    async def close(self) -> None:
        pass
