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
prices) where a call goes through it; `geo_multipliers`, a factor on the token prices by
where inference ran (`usage.inference_geo`: "us" is 1.1 for the models that take
`inference_geo`); a model's `fast_multiplier`, for a call that ran in fast mode
(`usage.speed` "fast").

A model priced by prompt length (Claude Haiku 5.5) has `tiers`: each one a threshold,
`above_prompt_tokens`, and the five token prices that apply to the WHOLE call (output and
cache included) once its prompt (input, cache reads and cache writes) is over it; the
highest tier passed applies. A file without `tiers` or `geo_multipliers` stays valid.

The Bedrock and Vertex entries (`bedrock/<profile>.<id>`, `vertex/<region>/<id>`) are
written by a rule from the file's `clouds` section (gateway/cloud_prices.py); an entry
listed in `models` under such a name wins over the rule's.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from gateway import cloud_prices

MILLION = 1_000_000
DATED = re.compile(r"-\d{8}$")
# Keys a usage dict may carry beyond `events.USAGE_KEYS`, when the upstream reports them.
CACHE_WRITE_1H_KEY = "cache_creation_1h_input_tokens"
WEB_SEARCH_KEY = "web_search_requests"
BATCH_KEY = "batch_requests"
"""1 for a call the API ran on its batch tier (`usage.service_tier` "batch")."""
FAST_KEY = "fast_requests"
"""1 for a call that ran in fast mode (`usage.speed` "fast")."""
GEO_KEY_PREFIX = "inference_geo_"
"""`inference_geo_us`: 1 for a call whose `usage.inference_geo` was "us" (not "global")."""


def geo_key(geo: str) -> str:
    """The usage key that marks a call run in `geo`."""
    return GEO_KEY_PREFIX + geo


@dataclass(frozen=True)
class PriceTier:
    """The token prices of a call whose prompt is over `above_prompt_tokens`."""

    above_prompt_tokens: int
    input: float
    output: float
    cache_write_5m: float
    cache_read: float
    cache_write_1h: float | None = None

    @classmethod
    def parse(cls, model: str, raw: Any) -> PriceTier:
        if not isinstance(raw, dict) or not isinstance(raw.get("above_prompt_tokens"), int):
            raise ValueError(f"price of {model!r}: a tier needs an integer above_prompt_tokens")
        try:
            tier = cls(**raw)
        except TypeError as exc:
            raise ValueError(f"price of {model!r}: tier: {exc}") from None
        _check_numbers(model, tier)
        return tier


@dataclass(frozen=True)
class ModelPrice:
    input: float
    output: float
    cache_write_5m: float
    cache_read: float
    cache_write_1h: float | None = None
    web_search_per_1k_usd: float | None = None
    fast_multiplier: float | None = None
    """Fast mode's factor on every token price (`speed: "fast"`, Opus models)."""
    tiers: tuple[PriceTier, ...] = ()
    """Prompt-length tiers, lowest threshold first."""

    @classmethod
    def parse(cls, model: str, raw: Any) -> ModelPrice:
        if not isinstance(raw, dict):
            raise ValueError(f"price of {model!r}: expected an object, got {raw!r}")
        tiers = raw.get("tiers", [])
        if not isinstance(tiers, list):
            raise ValueError(f"price of {model!r}: tiers must be a list")
        parsed = sorted(
            (PriceTier.parse(model, t) for t in tiers), key=lambda t: t.above_prompt_tokens
        )
        try:
            price = cls(**{**raw, "tiers": tuple(parsed)})
        except TypeError as exc:
            raise ValueError(f"price of {model!r}: {exc}") from None
        _check_numbers(model, price)
        return price

    def for_prompt(self, prompt_tokens: int) -> ModelPrice | PriceTier:
        """The prices that apply to a call with this many prompt tokens."""
        chosen: ModelPrice | PriceTier = self
        for tier in self.tiers:
            if prompt_tokens > tier.above_prompt_tokens:
                chosen = tier
        return chosen


def _check_numbers(model: str, price: ModelPrice | PriceTier) -> None:
    for name, value in vars(price).items():
        if name == "tiers" or value is None:
            continue
        if not isinstance(value, int | float) or value < 0:
            raise ValueError(f"price of {model!r}: {name} must be a number >= 0")


@dataclass(frozen=True)
class PriceTable:
    models: dict[str, ModelPrice]
    batch_discount: float = 0.5
    source: str = ""
    retrieved: str = ""
    geo_multipliers: dict[str, float] = field(default_factory=dict)
    """A factor on the token prices by `usage.inference_geo` ("us": 1.1)."""

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
        factor = self.batch_discount if batch else 1.0
        if usage.get(FAST_KEY) and price.fast_multiplier is not None:
            factor *= price.fast_multiplier
        for geo, multiplier in self.geo_multipliers.items():
            if usage.get(geo_key(geo)):
                factor *= multiplier
        return usage_cost(price, usage, factor)

    def merged(self, other: PriceTable) -> PriceTable:
        """This table with `other`'s models added or replacing these."""
        return PriceTable(
            {**self.models, **other.models},
            other.batch_discount,
            other.source or self.source,
            other.retrieved or self.retrieved,
            {**self.geo_multipliers, **other.geo_multipliers},
        )

    @classmethod
    def parse(cls, raw: Any) -> PriceTable:
        if not isinstance(raw, dict) or not isinstance(raw.get("models"), dict):
            raise ValueError('a price table is an object with a "models" object')
        entries = {**cloud_prices.generated(raw), **raw["models"]}
        models = {name: ModelPrice.parse(name, value) for name, value in entries.items()}
        discount = raw.get("batch_discount", 0.5)
        if not isinstance(discount, int | float) or not 0 < discount <= 1:
            raise ValueError("batch_discount must be a number in (0, 1]")
        source, retrieved = str(raw.get("source", "")), str(raw.get("retrieved", ""))
        geo = _geo_multipliers(raw.get("geo_multipliers", {}))
        return cls(models, float(discount), source, retrieved, geo)


def _geo_multipliers(raw: Any) -> dict[str, float]:
    if not isinstance(raw, dict) or not all(
        isinstance(v, int | float) and v > 0 for v in raw.values()
    ):
        raise ValueError("geo_multipliers must map a geography to a number > 0")
    return {str(geo): float(value) for geo, value in raw.items()}


def prompt_tokens(usage: dict[str, int]) -> int:
    """A call's prompt as the prompt-length tiers count it: input, cache reads and writes."""
    return (
        usage.get("input_tokens", 0)
        + usage.get("cache_read_input_tokens", 0)
        + usage.get("cache_creation_input_tokens", 0)
    )


def usage_cost(price: ModelPrice, usage: dict[str, int], token_factor: float = 1.0) -> float:
    """Dollars for one call's `usage` at `price` (the tier its prompt length reaches)."""
    rates = price.for_prompt(prompt_tokens(usage))
    created = usage.get("cache_creation_input_tokens", 0)
    created_1h = min(created, usage.get(CACHE_WRITE_1H_KEY, 0))
    write_1h = rates.cache_write_1h if rates.cache_write_1h is not None else rates.cache_write_5m
    tokens = (
        usage.get("input_tokens", 0) * rates.input
        + usage.get("output_tokens", 0) * rates.output
        + usage.get("cache_read_input_tokens", 0) * rates.cache_read
        + (created - created_1h) * rates.cache_write_5m
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
