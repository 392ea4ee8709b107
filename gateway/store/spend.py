"""What each key spent, per model, per UTC day and per UTC month: the ledger the budgets
of `access/spend.py` read and the admin API shows.

    SpendLedger   the interface: add amounts to a key's periods, read one period
    MemoryLedger  one process (lost on restart)
    SqliteLedger  a SQLite file (`store/sqlite.py`), without Redis
    RedisLedger   every replica sharing REDIS_URL (`store/redis/spend.py`)

A period is a UTC day (`2026-12-05`) or month (`2026-12`). Amounts are the `FIELDS` below;
each period reads as {model: {field: amount}}. Every kind keeps a day for `DAYS_KEPT` days
and a month for `MONTH_KEPT_DAYS` (Redis by its keys' TTL; the others prune on the first
charge of each UTC day, `horizon`), so the ledger does not grow forever.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Protocol

from gateway.days import Daily

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

DAYS_KEPT = 40
MONTH_KEPT_DAYS = 400


def horizon(day: str) -> tuple[str, str]:
    """On `day` (a UTC day), the oldest day and month still kept: a day of the last
    DAYS_KEPT days, a month that had a day in the last MONTH_KEPT_DAYS."""
    today = date.fromisoformat(day)
    oldest_day = today - timedelta(days=DAYS_KEPT)
    return oldest_day.isoformat(), (today - timedelta(days=MONTH_KEPT_DAYS)).strftime("%Y-%m")


periods: Daily[tuple[str, str]] = Daily(lambda day: (day.date().isoformat(), day.strftime("%Y-%m")))
"""`periods(now)`: the UTC day and month of `now` (seconds since the epoch)."""


class SpendLedger(Protocol):
    def add_now(
        self, name: str, model: str, in_periods: tuple[str, ...], amounts: dict[str, float]
    ) -> bool:
        """Add at once, if this ledger can without I/O (True); False: `add` must do it."""

    async def add(
        self, name: str, model: str, in_periods: tuple[str, ...], amounts: dict[str, float]
    ) -> None:
        """Add `amounts` (fields of FIELDS) to the key's model in a UTC day and its month
        (`in_periods`, as `periods` gives them)."""

    async def read(self, name: str, period: str) -> ByModel:
        """What the key spent in the period, by model (raises when the store fails)."""

    async def close(self) -> None: ...


class MemoryLedger:
    """One process's ledger, flat by (key, period, model). Days are kept as days (a month
    reads as the sum of its days), so charging a run costs one lookup; a day older than
    DAYS_KEPT is folded into its month's row, a month past MONTH_KEPT_DAYS dropped."""

    def __init__(self) -> None:
        self._spent: dict[tuple[str, str, str], dict[str, float]] = {}
        self._pruned_on = ""

    def add_now(
        self, name: str, model: str, in_periods: tuple[str, ...], amounts: dict[str, float]
    ) -> bool:
        day = in_periods[0]  # its month is read from its days
        if day != self._pruned_on:
            self._prune(day)
        fields = self._spent.get((name, day, model))
        if fields is None:
            fields = self._spent[name, day, model] = {}
        _add(fields, amounts)
        return True

    async def add(
        self, name: str, model: str, in_periods: tuple[str, ...], amounts: dict[str, float]
    ) -> None:
        self.add_now(name, model, in_periods, amounts)

    async def read(self, name: str, period: str) -> ByModel:
        spent: ByModel = {}
        for (owner, day, model), fields in self._spent.items():
            if owner == name and day.startswith(period):  # the day, or the month's rows
                _add(spent.setdefault(model, {}), fields)
        return spent

    async def close(self) -> None:
        pass

    def _prune(self, day: str) -> None:
        """Once a UTC day: fold old days into their months, drop old months."""
        self._pruned_on = day
        oldest_day, oldest_month = horizon(day)
        for owner, period, model in [k for k in self._spent if len(k[1]) > 7 and k[1] < oldest_day]:
            fields = self._spent.pop((owner, period, model))
            _add(self._spent.setdefault((owner, period[:7], model), {}), fields)
        for old in [k for k in self._spent if len(k[1]) == 7 and k[1] < oldest_month]:
            del self._spent[old]


def _add(total: dict[str, float], amounts: dict[str, float]) -> None:
    for field, amount in amounts.items():
        total[field] = total.get(field, 0) + amount
