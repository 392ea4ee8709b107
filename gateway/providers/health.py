"""Whether an upstream is known bad: several model calls in a row failed on it (after their
retries) and none succeeded since. The gateway is degraded when every upstream is."""

from __future__ import annotations

from typing import Any

# Codes only the model service causes (a gateway bug is UNKNOWN_ERROR, a bad request 400).
UPSTREAM_CODES = frozenset(
    {
        "AUTHENTICATION_ERROR",
        "PERMISSION_ERROR",
        "RATE_LIMIT_ERROR",
        "OVERLOADED_ERROR",
        "TIMEOUT_ERROR",
        "NETWORK_ERROR",
    }
)


class UpstreamHealth:
    """One upstream's record of model calls."""

    def __init__(self, threshold: int = 3) -> None:
        self.threshold = threshold
        self.consecutive_failures = 0
        self.last_error: str | None = None
        self.calls = 0

    def record(self, code: str | None) -> None:
        """A model call answered (None) or failed with `code` after its retries."""
        self.calls += 1
        if code is None:
            self.consecutive_failures = 0
        elif code in UPSTREAM_CODES:
            self.consecutive_failures += 1
            self.last_error = code

    @property
    def degraded(self) -> bool:
        return self.consecutive_failures >= self.threshold

    def report(self) -> dict[str, Any]:
        return {
            "status": "degraded" if self.degraded else "healthy",
            "consecutive_failures": self.consecutive_failures,
            "last_error": self.last_error,
        }


class UpstreamsHealth:
    """Every configured upstream's health, by name, in the order they are tried."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.by_name = {name: UpstreamHealth() for name in names}

    def record(self, upstream: str, code: str | None) -> None:
        health = self.by_name.get(upstream)
        if health is not None:
            health.record(code)

    @property
    def degraded(self) -> bool:
        return all(health.degraded for health in self.by_name.values())

    @property
    def primary(self) -> UpstreamHealth:
        return next(iter(self.by_name.values()))
