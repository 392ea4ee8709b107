"""Per-key limits, checked when a run starts: run starts per minute, runs in progress, and
tokens per UTC day. Over a limit the start is refused with 429 `RATE_LIMIT_ERROR` and
`Retry-After`, before any SSE header.

    Gate            what handlers call: admit (or raise RateLimited), hold, finished
    MemoryCounters  one process (store/counters.py)
    RedisCounters   every replica sharing REDIS_URL (store/redis/limits.py): one script call

A key's own limits (set through the admin API) replace the configured ones for that key.

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
from dataclasses import dataclass, field

from gateway.errors import GatewayError
from gateway.ids import token_hex
from gateway.ops.metrics import Metrics
from gateway.store.counters import (
    WINDOW_S,
    Counters,
    Limits,
    MemoryCounters,
    Refusal,
    Window,
    seconds_to_midnight,
    utc_day,
)

__all__ = [
    "WINDOW_S",
    "Admission",
    "Counters",
    "Gate",
    "Limits",
    "MemoryCounters",
    "RateLimited",
    "Refusal",
    "Window",
    "billed_tokens",
    "seconds_to_midnight",
    "utc_day",
]

log = logging.getLogger(__name__)


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


@dataclass(frozen=True)
class Admission:
    """A start within the key's limits: its ticket, and headers for the response."""

    ticket: str
    headers: dict[str, str] = field(default_factory=dict)


class Gate:
    """Admits run starts per key, and settles each run when its task ends."""

    def __init__(
        self, limits: Limits, counters: Counters, metrics: Metrics, *, per_key: bool = False
    ) -> None:
        """`per_key`: keys may have limits of their own (the admin API is on), so every
        run is settled, whatever the configured limits."""
        self.limits = limits
        self.per_key = per_key
        self._counters = counters
        self._metrics = metrics
        self._tickets: dict[str, tuple[str, str]] = {}  # run_id: (name, ticket)
        self._settling: set[asyncio.Task[None]] = set()

    async def admit(self, name: str, limits: Limits | None = None) -> Admission:
        """A ticket for one run start under `limits` (the key's own, else the configured
        ones), or RateLimited."""
        limits = limits or self.limits
        if not limits.active:  # no counters: the ticket is never settled
            return Admission("")
        ticket = token_hex(16)
        verdict = await self._counters.take(name, ticket, limits)
        if isinstance(verdict, Refusal):
            self._metrics.rate_limited.labels(name, verdict.limit).inc()
            raise RateLimited(name, verdict, limits)
        per_minute = limits.per_minute
        if verdict is None or not per_minute:
            return Admission(ticket)
        return Admission(ticket, window_headers(per_minute, verdict.used, verdict.reset_s))

    def hold(self, run_id: str, name: str, ticket: str) -> None:
        """The run started: its slot is freed when it finishes."""
        self._tickets[run_id] = (name, ticket)

    def release(self, name: str, ticket: str, tokens: int = 0) -> None:
        """Free a slot (a run that ended, or one that never started); charge tokens."""
        if not (self.limits.active or self.per_key):
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
        if held is not None and (self.limits.active or self.per_key):  # else nothing counts
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
