"""Whether the upstream is known bad: several runs in a row failed on it, none succeeded."""

from __future__ import annotations

# Codes only the model service causes (a gateway bug is UNKNOWN_ERROR, a bad request 400).
UPSTREAM_CODES = frozenset(
    {"AUTHENTICATION_ERROR", "PERMISSION_ERROR", "RATE_LIMIT_ERROR", "OVERLOADED_ERROR",
     "TIMEOUT_ERROR", "NETWORK_ERROR"}
)  # fmt: skip


class UpstreamHealth:
    def __init__(self, threshold: int = 3) -> None:
        self.threshold = threshold
        self.consecutive_failures = 0
        self.last_error: str | None = None

    def record(self, outcome: str) -> None:
        if outcome in UPSTREAM_CODES:
            self.consecutive_failures += 1
            self.last_error = outcome
        elif outcome in ("completed", "max_turns", "max_tokens", "refusal", "doom_loop"):
            self.consecutive_failures = 0

    @property
    def degraded(self) -> bool:
        return self.consecutive_failures >= self.threshold
