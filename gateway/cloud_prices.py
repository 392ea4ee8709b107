"""The price file's `clouds` section: a rule that writes the Bedrock and Vertex entries
from a model's Anthropic price, instead of one entry per model, cloud and region (pure,
on the file's JSON; pricing.py parses what it gives).

Anthropic's pricing page and the clouds' Claude pages: a model costs its Anthropic price
on a cloud's global endpoint (Bedrock's `global.` inference profile, Vertex's `global`
region) and `regional_multiplier` times it (10% more) on the regional and geographic ones.
The section:

    "clouds": {
      "regional_multiplier": 1.1,
      "bedrock": {"global": ["global"], "regional": ["us", "eu", ...]},
      "vertex": {"global": ["global"], "regional": ["us", "us-east5", ...]},
      "models": ["claude-sonnet-5-5", ...]
    }

writes, for each model listed (by the Messages API's id, priced in the same file's
`models`), `bedrock/<profile>.<Bedrock id>` for each Bedrock profile and
`vertex/<region>/<Vertex id>` for each Vertex region, with every token price scaled, the
prompt-length tiers' too. Server tools and fast mode are not run on the clouds, so their
prices are not carried. An entry written out in `models` wins over the rule's.
"""

from __future__ import annotations

from typing import Any

from gateway.cloud_ids import IDS, bedrock_name, vertex_name

TOKEN_PRICES = ("input", "output", "cache_write_5m", "cache_write_1h", "cache_read")


def generated(raw: dict[str, Any]) -> dict[str, Any]:
    """The entries the file's `clouds` section writes (none without one), by name."""
    section = raw.get("clouds")
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise ValueError('"clouds" must be an object (see gateway/cloud_prices.py)')
    regional = section.get("regional_multiplier", 1.0)
    if not isinstance(regional, int | float) or regional <= 0:
        raise ValueError("clouds.regional_multiplier must be a number > 0")
    entries: dict[str, Any] = {}
    for model in _names(section, "models"):
        base = raw["models"].get(model)
        if model not in IDS or not isinstance(base, dict):
            raise ValueError(f"clouds.models: {model!r} has no cloud id or no price here")
        for name, factor in _endpoints(section, model, float(regional)):
            entries[name] = scaled(base, factor)
    return entries


def _endpoints(section: dict[str, Any], model: str, regional: float) -> list[tuple[str, float]]:
    """Each name the model has on the clouds, with its factor on the Anthropic price."""
    bedrock_id, vertex_id = IDS[model]
    named: list[tuple[str, float]] = []
    for cloud in ("bedrock", "vertex"):
        where = section.get(cloud, {})
        if not isinstance(where, dict):
            raise ValueError(f"clouds.{cloud} must be an object")
        for kind, factor in (("global", 1.0), ("regional", regional)):
            for place in _names(where, kind, f"clouds.{cloud}."):
                name = (
                    bedrock_name(f"{place}.{bedrock_id}")
                    if cloud == "bedrock"
                    else vertex_name(vertex_id, place)
                )
                named.append((name, factor))
    return named


def _names(section: dict[str, Any], key: str, prefix: str = "clouds.") -> list[str]:
    names = section.get(key, [])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{prefix}{key} must be a list of strings")
    return names


def scaled(price: dict[str, Any], factor: float) -> dict[str, Any]:
    """A price entry's token prices (and its tiers') times `factor`, rounded to 10 places."""
    entry = {k: _times(v, factor) for k, v in price.items() if k in TOKEN_PRICES}
    tiers = price.get("tiers")
    if isinstance(tiers, list):
        entry["tiers"] = [
            {k: (_times(v, factor) if k in TOKEN_PRICES else v) for k, v in tier.items()}
            if isinstance(tier, dict)
            else tier
            for tier in tiers
        ]
    return entry


def _times(value: Any, factor: float) -> Any:
    """A number scaled; anything else as it is (the price's own check refuses it)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return round(value * factor, 10)
    return value
