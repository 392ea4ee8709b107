"""The price file's `clouds` rule (gateway/cloud_prices.py): the Bedrock and Vertex entries
it writes, what wins over it, and the sections it refuses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway import pricing

HAIKU_5_5 = {
    "input": 0.1,
    "output": 0.5,
    "cache_write_5m": 0.125,
    "cache_read": 0.01,
    "web_search_per_1k_usd": 10.0,
    "tiers": [
        {
            "above_prompt_tokens": 100_000,
            "input": 0.5,
            "output": 2.5,
            "cache_write_5m": 0.625,
            "cache_read": 0.05,
        }
    ],
}


def table(clouds: Any, **models: Any) -> dict[str, Any]:
    return {"models": {"claude-haiku-5-5": HAIKU_5_5, **models}, "clouds": clouds}


RULE = {
    "regional_multiplier": 1.1,
    "bedrock": {"global": ["global"], "regional": ["eu"]},
    "vertex": {"global": ["global"], "regional": ["europe-west4"]},
    "models": ["claude-haiku-5-5"],
}


def test_the_rule_writes_each_profile_and_region_with_its_tiers() -> None:
    parsed = pricing.PriceTable.parse(table(RULE))
    assert set(parsed.models) == {
        "claude-haiku-5-5",
        "bedrock/global.anthropic.claude-haiku-5-5",
        "bedrock/eu.anthropic.claude-haiku-5-5",
        "vertex/global/claude-haiku-5-5",
        "vertex/europe-west4/claude-haiku-5-5",
    }
    regional = parsed.models["vertex/europe-west4/claude-haiku-5-5"]
    assert (regional.input, regional.output, regional.cache_read) == (0.11, 0.55, 0.011)
    assert regional.web_search_per_1k_usd is None  # no server tools on the clouds
    [tier] = regional.tiers
    assert (tier.above_prompt_tokens, tier.input, tier.output) == (100_000, 0.55, 2.75)
    assert parsed.models["bedrock/global.anthropic.claude-haiku-5-5"].input == 0.1
    long_call = {"input_tokens": 100_001, "output_tokens": 1_000}
    cost = parsed.cost("bedrock/eu.anthropic.claude-haiku-5-5", long_call)
    assert cost == pytest.approx((100_001 * 0.55 + 1_000 * 2.75) / 1e6)


def test_an_entry_written_out_wins_over_the_rule() -> None:
    own = {"input": 9.0, "output": 9.0, "cache_write_5m": 9.0, "cache_read": 9.0}
    parsed = pricing.PriceTable.parse(table(RULE, **{"bedrock/eu.anthropic.claude-haiku-5-5": own}))
    assert parsed.models["bedrock/eu.anthropic.claude-haiku-5-5"].input == 9.0
    assert parsed.models["bedrock/global.anthropic.claude-haiku-5-5"].input == 0.1


@pytest.mark.parametrize(
    ("clouds", "message"),
    [
        ("every region +10%", '"clouds" must be an object'),
        ({**RULE, "regional_multiplier": 0}, "regional_multiplier"),
        ({**RULE, "models": ["claude-unknown-9"]}, "'claude-unknown-9' has no cloud id"),
        ({**RULE, "models": ["claude-opus-5-5"]}, "'claude-opus-5-5' has no cloud id or no price"),
        ({**RULE, "bedrock": {"regional": "eu"}}, "clouds.bedrock.regional must be a list"),
    ],
)
def test_a_section_it_cannot_read_is_refused(clouds: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        pricing.PriceTable.parse(table(clouds))


def test_a_prices_file_with_its_own_rule(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    sonnet = {"input": 1.0, "output": 5.0, "cache_write_5m": 1.25, "cache_read": 0.05}
    rule = {"regional_multiplier": 1.2, "vertex": {"regional": ["us-east5"]}}
    path.write_text(
        json.dumps(
            {
                "models": {"claude-sonnet-5-5": sonnet},
                "clouds": {**rule, "models": ["claude-sonnet-5-5"]},
            }
        )
    )
    loaded = pricing.load(str(path))
    assert loaded.price("vertex/us-east5/claude-sonnet-5-5") == pricing.ModelPrice(
        input=1.2, output=6.0, cache_write_5m=1.5, cache_read=0.06
    )
    # The shipped rule's other entries stay.
    assert loaded.price("bedrock/us.anthropic.claude-sonnet-5-5") is not None


def test_the_shipped_rule_prices_every_cloud_entry_from_its_anthropic_price() -> None:
    shipped = pricing.shipped()
    sonnet = shipped.price("claude-sonnet-5-5")
    assert shipped.price("vertex/global/claude-sonnet-5-5") == pricing.ModelPrice(
        input=2.0, output=10.0, cache_write_5m=2.5, cache_read=0.1, cache_write_1h=4.0
    )
    assert sonnet is not None and sonnet.web_search_per_1k_usd == 10.0
    cloud = [n for n in shipped.models if n.startswith(("bedrock/", "vertex/"))]
    assert len(cloud) == 6 * (6 + 7)  # 6 models; 6 Bedrock profiles, 7 Vertex regions
