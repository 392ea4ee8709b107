"""What each key spends, and the dollar budgets that hold it.

Every run (and batch question) that ends is charged to its key's ledger (`store/spend.py`):
per model, per UTC day and month, tokens by class, dollars, runs, batch questions; and to
the metrics `gateway_key_*_total`, labelled by key name. A run's cost is charged when its
task ends, so a run that starts under a budget finishes even if it crosses it.

Budgets are checked when a run starts, before any SSE header: `daily_usd` (the key's own,
else GATEWAY_DAILY_USD_BUDGET) and the key's `monthly_usd`. A key that spent one gets 429
`RATE_LIMIT_ERROR` with `Retry-After` (to the next UTC day or month). A budget never meets
a model without a price: such a run is refused before it starts (`admission.py`), never
charged $0. If the ledger does not answer, starts are let through, as the other limits do.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from gateway.errors import GatewayError
from gateway.ops.metrics import Metrics, Total
from gateway.store.counters import seconds_to_midnight
from gateway.store.spend import FIELDS, ByModel, SpendLedger, periods

log = logging.getLogger(__name__)

TOKEN_CLASSES = {
    "input_tokens": "input",
    "output_tokens": "output",
    "cache_read_input_tokens": "cache_read",
    "cache_creation_input_tokens": "cache_creation",
}


Series = tuple[Total, Total, list[tuple[str, Total]]]
"""A key's and model's metric series: runs, dollars, tokens by field."""


@dataclass(frozen=True)
class Budgets:
    """Dollars a key may spend; 0: no budget."""

    daily_usd: float = 0.0
    monthly_usd: float = 0.0

    @property
    def active(self) -> bool:
        return bool(self.daily_usd or self.monthly_usd)


class Spend:
    """Charges runs to the ledger; admits run starts under a key's dollar budgets."""

    def __init__(self, ledger: SpendLedger, metrics: Metrics) -> None:
        self.ledger = ledger
        self._metrics = metrics
        self._charging: set[asyncio.Task[None]] = set()
        self._series: dict[tuple[str, str, bool], Series] = {}

    async def admit(self, name: str, budgets: Budgets) -> None:
        """Return, or raise `OverBudget` when the key spent a budget of this day or month."""
        if not budgets.active:
            return
        now = time.time()
        day, month = periods(now)
        for limit, period, budget in (
            ("daily_usd", day, budgets.daily_usd),
            ("monthly_usd", month, budgets.monthly_usd),
        ):
            if budget and (spent := await self._usd(name, period)) is not None and spent >= budget:
                self._metrics.rate_limited.labels(name, limit).inc()
                raise OverBudget(name, limit, budget, _retry_after(limit, now))

    async def report(self, name: str) -> dict[str, Any]:
        """`{today, month}`, each the totals and `by_model` (raises if the ledger fails)."""
        day, month = periods(time.time())
        today = await self.ledger.read(name, day)
        this_month = await self.ledger.read(name, month)
        return {"today": summary(today, day), "month": summary(this_month, month)}

    def charge(
        self,
        name: str,
        model: str,
        usage: dict[str, int],
        usd: float | None,
        *,
        batch_question: bool = False,
    ) -> None:
        """Charge one finished run (or batch question): at once to an in-memory ledger,
        else in the background. Zero amounts are left out."""
        series = self._series.get((name, model, batch_question))
        if series is None:  # the labels' series are looked up once per key and model
            series = self._series[(name, model, batch_question)] = self._new_series(
                name, model, batch_question
            )
        runs, spent, tokens = series
        runs.inc()
        amounts: dict[str, float] = {"batch_questions" if batch_question else "runs": 1}
        for field, counter in tokens:  # TOKEN_CLASSES, in order
            if value := usage.get(field):
                amounts[field] = value
                counter.inc(value)
        if usd:
            amounts["usd"] = usd
            spent.inc(usd)
        if self.ledger.add_now(name, model, periods(time.time()), amounts):
            return
        task = asyncio.get_running_loop().create_task(self._charge(name, model, amounts))
        self._charging.add(task)
        task.add_done_callback(self._charging.discard)

    async def settled(self) -> None:
        while self._charging:
            await asyncio.gather(*self._charging, return_exceptions=True)

    async def close(self) -> None:
        await self.settled()
        await self.ledger.close()

    def _new_series(self, name: str, model: str, batch: bool) -> Series:
        metrics = self._metrics
        runs = metrics.key_runs.labels(name, model, "batch_question" if batch else "run")
        tokens = [(f, metrics.key_tokens.labels(name, model, c)) for f, c in TOKEN_CLASSES.items()]
        return runs, metrics.key_usd.labels(name, model), tokens

    async def _charge(self, name: str, model: str, amounts: dict[str, float]) -> None:
        try:
            await self.ledger.add(name, model, periods(time.time()), amounts)
        except (Exception, TimeoutError) as exc:
            log.warning("spend: cannot charge a run of %s to the ledger (%s)", name, exc)

    async def _usd(self, name: str, period: str) -> float | None:
        try:
            spent = await self.ledger.read(name, period)
        except (Exception, TimeoutError) as exc:
            log.warning(
                "spend: the ledger did not answer (%s); a start of %s let through", exc, name
            )
            return None
        return sum(fields.get("usd", 0.0) for fields in spent.values())


def summary(by_model: ByModel, period: str) -> dict[str, Any]:
    """A period's totals over every model, and each model's."""
    totals: dict[str, Any] = {"period": period, **dict.fromkeys(FIELDS, 0)}
    models: dict[str, Any] = {}
    for model, fields in sorted(by_model.items()):
        models[model] = {f: _number(f, fields.get(f, 0)) for f in FIELDS}
        for field in FIELDS:
            totals[field] += fields.get(field, 0)
    return {**{f: _number(f, v) for f, v in totals.items()}, "by_model": models}


def _number(field: str, value: Any) -> Any:
    if field == "usd":
        return round(float(value), 9)
    return int(value) if isinstance(value, int | float) else value


def _retry_after(limit: str, now: float) -> float:
    if limit == "daily_usd":
        return seconds_to_midnight(now)
    moment = datetime.fromtimestamp(now, UTC)
    year, month = (moment.year + 1, 1) if moment.month == 12 else (moment.year, moment.month + 1)
    return (datetime(year, month, 1, tzinfo=UTC) - moment).total_seconds()


class OverBudget(GatewayError):
    """A key spent its dollars for today or this month: the same 429 as its other limits."""

    def __init__(self, name: str, limit: str, budget_usd: float, retry_after_s: float) -> None:
        retry = max(1, math.ceil(retry_after_s))
        super().__init__(
            "RATE_LIMIT_ERROR",
            f"Key {name!r} is over its {limit} limit ({budget_usd}); retry in {retry} s",
            {"limit": limit, "value": budget_usd, "key": name, "retry_after_s": retry},
        )
        self.headers["Retry-After"] = str(retry)
