"""What the tests of the current models on the clouds share: the cases (a cloud, a region,
a model, its thinking), their published prices, a fake cloud and the gateway's settings
for it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer
from pytest_aiohttp import AiohttpServer

from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.bedrock import FakeBedrock
from tests.fakes.vertex import FakeVertex
from tests.providers.clouds_support import bare_aws, bare_google, bedrock_settings, vertex_settings

NOTE = "Let me pull NVIDIA's filings first."
REASONING = "The user wants revenue; the 10-K has it."
# USD per million tokens (input, output, 5-minute cache write, cache read), as published:
# a model's Anthropic price (platform.claude.com/docs/en/about-claude/pricing) on the
# clouds' global endpoints, 10% more on Bedrock's geographic profiles and Vertex's regions.
PUBLISHED = {
    "bedrock/us.anthropic.claude-sonnet-5-5": (2.2, 11.0, 2.75, 0.11),
    "vertex/global/claude-sonnet-5-5": (2.0, 10.0, 2.5, 0.10),
    "vertex/us-east5/claude-opus-5-5": (4.4, 22.0, 5.5, 0.22),
    "bedrock/global.anthropic.claude-opus-5-5": (4.0, 20.0, 5.0, 0.20),
    # Haiku 5.5 over 100,000 prompt tokens: five times every class ($0.50/$2.50), +10%.
    "bedrock/eu.anthropic.claude-haiku-5-5": (0.55, 2.75, 0.6875, 0.055),
}
SHORT: list[dict[str, Any]] = [
    {"input_tokens": 1_000, "output_tokens": 200, "cache_read": 0, "cache_creation": 3_000},
    {"input_tokens": 300, "output_tokens": 500, "cache_read": 3_000, "cache_creation": 400},
]
LONG: list[dict[str, Any]] = [  # each call's prompt is over Haiku 5.5's 100,000 tokens
    {"input_tokens": 90_000, "output_tokens": 200, "cache_read": 0, "cache_creation": 20_000},
    {"input_tokens": 2_000, "output_tokens": 300, "cache_read": 110_000, "cache_creation": 0},
]


@dataclass(frozen=True)
class Case:
    name: str
    """The gateway's name of the cloud's model (`final.model`, the price's key)."""
    region: str
    model: str
    thinking: str
    sent: dict[str, Any] | None
    """The `thinking` the cloud got."""
    turns: list[dict[str, Any]]

    @property
    def cloud(self) -> str:
        return self.name.split("/")[0]

    def cost(self) -> float:
        inp, out, write, read = PUBLISHED[self.name]
        tokens: float = sum(
            t["input_tokens"] * inp
            + t["output_tokens"] * out
            + t["cache_creation"] * write
            + t["cache_read"] * read
            for t in self.turns
        )
        return tokens / 1_000_000


BETWEEN, ADAPTIVE, DISABLED = ({"type": t} for t in ("between_tools", "adaptive", "disabled"))
CASES = [
    # Sonnet 5.5 with thinking off: `between_tools`, its notes are progress.
    Case(
        "bedrock/us.anthropic.claude-sonnet-5-5",
        "us-east-1",
        "claude-sonnet-5-5",
        "off",
        BETWEEN,
        SHORT,
    ),
    Case("vertex/global/claude-sonnet-5-5", "global", "claude-sonnet-5-5", "off", BETWEEN, SHORT),
    # Opus 5.5 with thinking on: no display the clouds document, every block is reasoning.
    Case("vertex/us-east5/claude-opus-5-5", "us-east5", "claude-opus-5-5", "on", ADAPTIVE, SHORT),
    Case(
        "bedrock/global.anthropic.claude-opus-5-5",
        "us-east-1",
        "claude-opus-5-5",
        "on",
        ADAPTIVE,
        SHORT,
    ),
    # Haiku 5.5 with thinking off (it takes `disabled`), at its long-prompt tier.
    Case(
        "bedrock/eu.anthropic.claude-haiku-5-5",
        "eu-west-1",
        "claude-haiku-5-5",
        "off",
        DISABLED,
        LONG,
    ),
]


async def cloud_server(
    case: Case, fake: FakeAnthropic, server: AiohttpServer, mp: pytest.MonkeyPatch, tmp: Path
) -> tuple[TestServer, FakeBedrock | FakeVertex]:
    if case.cloud == "bedrock":
        bedrock = FakeBedrock(fake, region=case.region)
        bedrock.add_static("AKIATESTKEY", "test/secret")
        bare_aws(mp, tmp)
        mp.setenv("AWS_ACCESS_KEY_ID", "AKIATESTKEY")
        mp.setenv("AWS_SECRET_ACCESS_KEY", "test/secret")
        return await server(bedrock.app()), bedrock
    vertex = FakeVertex(fake, region=case.region)
    bare_google(mp, tmp)
    running = await server(vertex.app())
    mp.setenv(
        "GOOGLE_APPLICATION_CREDENTIALS",
        str(vertex.write_key(tmp, str(running.make_url("/token")))),
    )
    return running, vertex


def gateway_settings(case: Case, server: TestServer) -> dict[str, Any]:
    if case.cloud == "bedrock":
        values = bedrock_settings(server, aws_region=case.region)
        if case.name.startswith("bedrock/global."):  # the global profile, named outright
            values["gateway_bedrock_model"] = case.name.removeprefix("bedrock/")
    else:
        values = vertex_settings(server, gateway_vertex_region=case.region)
    return {**values, "sdk_model": case.model, "sdk_thinking": case.thinking}
