"""What a run costs in dollars: a price table per model and the cost of one model call's
usage under it.

The table ships with the gateway (`gateway/prices.json`, which names its source and the
day it was read); `GATEWAY_PRICES_FILE` (the same JSON shape) overrides models or adds
them. A model the table does not know has no price: its cost is None, never a guess.

Prices are USD per million tokens: `input` (uncached), `output`, `cache_write_5m` and
`cache_write_1h` (prompt-cache writes; the gateway's breakpoints are the default 5-minute
kind, so `cache_creation_input_tokens` is priced at `cache_write_5m` unless the usage says
how many were 1-hour writes), `cache_read`; `web_search_per_1k_usd` per 1,000 server-side
searches; the Message Batches API's discount (`batch_discount`, a factor on the token
prices) where a call goes through it.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

MILLION = 1_000_000
DATED = re.compile(r"-\d{8}$")
# Keys a usage dict may carry beyond `events.USAGE_KEYS`, when the upstream reports them.
CACHE_WRITE_1H_KEY = "cache_creation_1h_input_tokens"
WEB_SEARCH_KEY = "web_search_requests"
BATCH_KEY = "batch_requests"
"""1 for a call the API ran on its batch tier (`usage.service_tier` "batch")."""


@dataclass(frozen=True)
class ModelPrice:
    input: float
    output: float
    cache_write_5m: float
    cache_read: float
    cache_write_1h: float | None = None
    web_search_per_1k_usd: float | None = None

    @classmethod
    def parse(cls, model: str, raw: Any) -> ModelPrice:
        if not isinstance(raw, dict):
            raise ValueError(f"price of {model!r}: expected an object, got {raw!r}")
        try:
            price = cls(**raw)
        except TypeError as exc:
            raise ValueError(f"price of {model!r}: {exc}") from None
        for name, value in vars(price).items():
            if value is not None and (not isinstance(value, int | float) or value < 0):
                raise ValueError(f"price of {model!r}: {name} must be a number >= 0")
        return price


@dataclass(frozen=True)
class PriceTable:
    models: dict[str, ModelPrice]
    batch_discount: float = 0.5
    source: str = ""
    retrieved: str = ""

    def price(self, model: str) -> ModelPrice | None:
        """The model's price, by its id or, for a dated id, its alias."""
        price = self.models.get(model)
        if price is None and DATED.search(model):
            price = self.models.get(DATED.sub("", model))
        return price

    def cost(self, model: str, usage: dict[str, int], *, batch: bool = False) -> float | None:
        """Dollars for one model call's `usage`; None when `model` has no price."""
        price = self.price(model)
        if price is None:
            return None
        batch = batch or bool(usage.get(BATCH_KEY))
        return usage_cost(price, usage, self.batch_discount if batch else 1.0)

    def merged(self, other: PriceTable) -> PriceTable:
        """This table with `other`'s models added or replacing these."""
        return PriceTable(
            {**self.models, **other.models},
            other.batch_discount,
            other.source or self.source,
            other.retrieved or self.retrieved,
        )

    @classmethod
    def parse(cls, raw: Any) -> PriceTable:
        if not isinstance(raw, dict) or not isinstance(raw.get("models"), dict):
            raise ValueError('a price table is an object with a "models" object')
        models = {name: ModelPrice.parse(name, value) for name, value in raw["models"].items()}
        discount = raw.get("batch_discount", 0.5)
        if not isinstance(discount, int | float) or not 0 < discount <= 1:
            raise ValueError("batch_discount must be a number in (0, 1]")
        return cls(
            models, float(discount), str(raw.get("source", "")), str(raw.get("retrieved", ""))
        )


def usage_cost(price: ModelPrice, usage: dict[str, int], token_factor: float = 1.0) -> float:
    created = usage.get("cache_creation_input_tokens", 0)
    created_1h = min(created, usage.get(CACHE_WRITE_1H_KEY, 0))
    write_1h = price.cache_write_1h if price.cache_write_1h is not None else price.cache_write_5m
    tokens = (
        usage.get("input_tokens", 0) * price.input
        + usage.get("output_tokens", 0) * price.output
        + usage.get("cache_read_input_tokens", 0) * price.cache_read
        + (created - created_1h) * price.cache_write_5m
        + created_1h * write_1h
    ) / MILLION
    searches = usage.get(WEB_SEARCH_KEY, 0) * (price.web_search_per_1k_usd or 0.0) / 1000
    return tokens * token_factor + searches


@functools.cache
def shipped() -> PriceTable:
    """The table that ships with the gateway."""
    text = resources.files("gateway").joinpath("prices.json").read_text(encoding="utf-8")
    return PriceTable.parse(json.loads(text))


def load(path: str | None) -> PriceTable:
    """The shipped table, with the file at `path` (if any) over it; a bad file raises
    ValueError naming it, so the gateway does not start on a price table it cannot read."""
    table = shipped()
    if not path:
        return table
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        return table.merged(PriceTable.parse(raw))
    except (OSError, ValueError) as exc:
        raise ValueError(f"GATEWAY_PRICES_FILE {path}: {exc}") from None


def add_cost(total: float | None, cost: float | None) -> float | None:
    """A run's running cost: None once any call of it had no price."""
    return None if total is None or cost is None else total + cost
