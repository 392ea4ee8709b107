"""What each key spent, per model, per UTC day and per UTC month: the ledger the budgets
of `access/spend.py` read and the admin API shows.

    SpendLedger   the interface: add amounts to a key's periods, read one period
    MemoryLedger  one process (lost on restart)
    SqliteLedger  a SQLite file (`store/sqlite.py`), without Redis
    RedisLedger   every replica sharing REDIS_URL (`store/redis/spend.py`)

A period is a UTC day (`2026-12-05`) or month (`2026-12`). Amounts are the `FIELDS` below;
each period reads as {model: {field: amount}}.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol

FIELDS = (
    "runs",
    "batch_questions",
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "usd",
)
"""What is counted for each key, model and period."""

ByModel = dict[str, dict[str, float]]


def periods(now: float) -> tuple[str, str]:
    """The UTC day and month of `now` (seconds since the epoch)."""
    moment = datetime.fromtimestamp(now, UTC)
    return moment.date().isoformat(), moment.strftime("%Y-%m")


class SpendLedger(Protocol):
    async def add(
        self, name: str, model: str, in_periods: tuple[str, ...], amounts: dict[str, float]
    ) -> None:
        """Add `amounts` (fields of FIELDS) to the key's model in every period."""

    async def read(self, name: str, period: str) -> ByModel:
        """What the key spent in the period, by model (raises when the store fails)."""

    async def close(self) -> None: ...


class MemoryLedger:
    def __init__(self) -> None:
        self._spent: dict[tuple[str, str], ByModel] = {}

    async def add(
        self, name: str, model: str, in_periods: tuple[str, ...], amounts: dict[str, float]
    ) -> None:
        for period in in_periods:
            fields = self._spent.setdefault((name, period), {}).setdefault(model, {})
            for field, amount in amounts.items():
                fields[field] = fields.get(field, 0) + amount

    async def read(self, name: str, period: str) -> ByModel:
        found = self._spent.get((name, period), {})
        return {model: dict(fields) for model, fields in found.items()}

    async def close(self) -> None:
        pass
