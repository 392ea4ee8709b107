"""Per-key limits, checked when a run starts: run starts per minute, runs in progress, and
tokens per UTC day. Over a limit the start is refused with 429 `RATE_LIMIT_ERROR` and
`Retry-After`, before any SSE header.

    Gate            what handlers call: admit (or raise RateLimited), hold, finished
    MemoryCounters  one process (limits.py)
    RedisCounters   every replica sharing REDIS_URL (limits_redis.py): one script call

The minute is a sliding window: the start times of the last 60 s are kept (a key's log
holds at most its limit), so no 60 s span ever holds more than the limit; a fixed window
lets twice the limit through around its edge (a burst at second 59, another at 61). A
refused start is told when the oldest start leaves the window. A run's concurrency slot is
released and its tokens charged when its task ends, whatever ended it; tokens are charged
at the end, so a run that starts under the budget finishes even if it crosses it.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from secrets import token_hex
from typing import Literal, Protocol

from gateway.errors import GatewayError
from gateway.ops.metrics import Metrics

log = logging.getLogger(__name__)

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


def window_headers(limit: int, used: int, reset_s: float) -> dict[str, str]:
    """The `RateLimit-*` headers (IETF draft; Kong sends them too) of the per-minute limit."""
    return {
        "RateLimit-Limit": str(limit),
        "RateLimit-Remaining": str(max(0, limit - used)),
        "RateLimit-Reset": str(max(1, math.ceil(reset_s))),
    }


class RateLimited(GatewayError):
    """A key is over one of its limits."""

    def __init__(self, name: str, refusal: Refusal, limits: Limits) -> None:
        retry = max(1, math.ceil(refusal.retry_after_s))
        value = getattr(limits, refusal.limit)
        super().__init__(
            "RATE_LIMIT_ERROR",
            f"Key {name!r} is over its {refusal.limit} limit ({value}); retry in {retry} s",
            {"limit": refusal.limit, "value": value, "key": name, "retry_after_s": retry},
        )
        self.headers["Retry-After"] = str(retry)
        if refusal.limit == "per_minute":
            self.headers |= window_headers(value, value, retry)


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


@dataclass(frozen=True)
class Admission:
    """A start within the key's limits: its ticket, and headers for the response."""

    ticket: str
    headers: dict[str, str] = field(default_factory=dict)


class Gate:
    """Admits run starts per key, and settles each run when its task ends."""

    def __init__(self, limits: Limits, counters: Counters, metrics: Metrics) -> None:
        self.limits = limits
        self._counters = counters
        self._metrics = metrics
        self._tickets: dict[str, tuple[str, str]] = {}  # run_id: (name, ticket)
        self._settling: set[asyncio.Task[None]] = set()

    async def admit(self, name: str) -> Admission:
        """A ticket for one run start, or RateLimited."""
        if not self.limits.active:  # no counters: the ticket is never settled
            return Admission("")
        ticket = token_hex(16)
        verdict = await self._counters.take(name, ticket, self.limits)
        if isinstance(verdict, Refusal):
            self._metrics.rate_limited.labels(name, verdict.limit).inc()
            raise RateLimited(name, verdict, self.limits)
        per_minute = self.limits.per_minute
        if verdict is None or not per_minute:
            return Admission(ticket)
        return Admission(ticket, window_headers(per_minute, verdict.used, verdict.reset_s))

    def hold(self, run_id: str, name: str, ticket: str) -> None:
        """The run started: its slot is freed when it finishes."""
        self._tickets[run_id] = (name, ticket)

    def release(self, name: str, ticket: str, tokens: int = 0) -> None:
        """Free a slot (a run that ended, or one that never started); charge tokens."""
        if not self.limits.active:
            return
        task = asyncio.get_running_loop().create_task(self._settle(name, ticket, tokens))
        self._settling.add(task)
        task.add_done_callback(self._settling.discard)

    def finished(self, run_id: str, usage: dict[str, int], owner: str | None = None) -> None:
        """The run's task ended (any way at all): settle its ticket. One admitted by
        another worker (a batch taken over) holds no ticket here: `owner` is charged its
        tokens all the same, with a ticket that frees no slot."""
        held = self._tickets.pop(run_id, None)
        if held is None and owner is not None:
            held = (owner, token_hex(16))
        if held is not None and self.limits.active:  # no limits: nothing to count
            self.release(*held, tokens=billed_tokens(usage))

    async def settled(self) -> None:
        """Return once every run that ended has been settled."""
        while self._settling:
            await asyncio.gather(*self._settling, return_exceptions=True)

    async def close(self) -> None:
        """Wait for the last settlements (runs end at shutdown), then disconnect."""
        await self.settled()
        await self._counters.close()

    async def _settle(self, name: str, ticket: str, tokens: int) -> None:
        try:
            await self._counters.settle(name, ticket, tokens)
        except Exception as exc:  # the counters' store failed: the lease expires the slot
            log.warning("limits: cannot settle a run of %s (%s)", name, exc)


def billed_tokens(usage: dict[str, int]) -> int:
    """Input (cached or not, as the GenAI conventions count it) plus output tokens."""
    return sum(
        usage.get(field, 0)
        for field in (
            "input_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
            "output_tokens",
        )
    )
