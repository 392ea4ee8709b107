"""The current models (Sonnet, Opus and Haiku 5.5) on Bedrock and Vertex: the default is
named, recorded and priced on each cloud; a tool run through each cloud costs the cloud's
published price (Haiku 5.5's long-prompt tier included); its notes come back as
"progress" where the cloud's record says the model returns them, else as reasoning."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer
from pytest_aiohttp import AiohttpServer

from gateway import pricing
from gateway.cloud_ids import anthropic_id
from gateway.providers.anthropic.lineup import CURRENT
from gateway.providers.cloud_models import cloud_record
from gateway.settings import Settings
from tests.conftest import GatewayFactory, stream
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, Thinking, ToolUse
from tests.fakes.bedrock import FakeBedrock
from tests.fakes.vertex import FakeVertex
from tests.providers.clouds_support import (
    bare_aws,
    bare_google,
    bedrock_settings,
    phases,
    vertex_settings,
)

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


@pytest.mark.parametrize("model", sorted(CURRENT.values()))
@pytest.mark.parametrize(
    "cloud",
    [{"aws_region": r} for r in ("us-east-1", "eu-west-1", "ap-northeast-1", None)]
    + [{"gateway_vertex_region": r} for r in ("global", "us-east5", "europe-west1")],
)
def test_each_current_model_is_named_recorded_and_priced_on_each_cloud(
    model: str, cloud: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bare_aws(monkeypatch, tmp_path)
    kind = "bedrock" if "aws_region" in cloud else "vertex"
    settings = Settings(_env_file=None, gateway_upstream=kind, sdk_model=model, **cloud)
    name = settings.model
    assert name.startswith(f"{kind}/") and anthropic_id(name) == model
    if kind == "bedrock":  # current models only through an inference profile
        assert not name.startswith("bedrock/anthropic.")
    record = cloud_record(name)
    assert record.source == "provider" and record.lifecycle == "active"
    assert record.thinking_adaptive and record.legacy_successor is None
    assert pricing.shipped().price(name) is not None, name


def test_the_default_model_is_a_current_one_the_clouds_know() -> None:
    default = Settings.model_fields["sdk_model"].default
    assert default in CURRENT.values()
    on_bedrock = Settings(_env_file=None, gateway_upstream="bedrock", aws_region="us-west-2")
    assert on_bedrock.model == f"bedrock/us.anthropic.{default}"
    assert cloud_record(on_bedrock.model).source == "provider"


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


def kinds(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Each thinking block as the client saw it: its kind and its text."""
    blocks: list[tuple[str, str]] = []
    for event in events:
        if event["type"] == "thinking_start":
            blocks.append((event["kind"], ""))
        elif event["type"] == "thinking" and blocks:
            blocks[-1] = (blocks[-1][0], blocks[-1][1] + event["text"])
    return blocks


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_a_tool_run_costs_the_clouds_published_price(
    case: Case,
    make_gateway: GatewayFactory,
    aiohttp_server: AiohttpServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    fake = FakeAnthropic()
    server, cloud = await cloud_server(case, fake, aiohttp_server, monkeypatch, tmp_path)
    thought: list[Any] = [Thinking(REASONING), Thinking(NOTE, progress=True)]
    fake.add(
        Reply(
            [
                *(thought if case.sent != DISABLED else [Text(NOTE)]),
                ToolUse("echo", {"text": "NVDA"}),
            ],
            **case.turns[0],
        ),
        Reply([Text("Revenue was $130.5 billion.")], **case.turns[1]),
    )
    client = await make_gateway(**gateway_settings(case, server))
    events = await stream(client, query="NVIDIA revenue?")
    final = events[-1]
    assert final["type"] == "final" and final["outcome"] == "completed", final
    assert final["model"] == case.name and phases(events, "tool_result")
    assert final["total_cost_usd"] == pytest.approx(case.cost(), rel=1e-9)
    assert not cloud.refusals and not fake.rejected
    assert [r.get("thinking") for r in fake.requests] == [case.sent] * 2
    shown = kinds(events)
    if case.sent == BETWEEN:  # the record says the notes come back: progress
        assert shown == [("progress", NOTE)]
    elif case.sent == ADAPTIVE:  # omitted by default: empty, and reasoning
        assert shown == [("reasoning", ""), ("reasoning", "")]
    else:  # no thinking: the note is the answer's text
        assert shown == [] and final["result"].startswith(NOTE)


async def two_runs(
    case: Case,
    tools: list[str] | None,
    make_gateway: GatewayFactory,
    server: TestServer,
    fake: FakeAnthropic,
) -> list[dict[str, Any]]:
    """A run, then the session continued (with `tools` as its allow-list, if any)."""
    client = await make_gateway(**gateway_settings(case, server))
    body: dict[str, Any] = {"query": "first"}
    for _ in range(2):
        fake.add(
            Reply(
                [Thinking(REASONING), Thinking(NOTE, progress=True), ToolUse("echo", {"text": "a"})]
            ),
            Reply([Text("Answer.")]),
        )
        events = await stream(client, **body)
        body = {"query": "second", "sessionId": events[-1].get("session_id")}
        if tools is not None:
            body["tools"] = tools
    return events


@pytest.mark.parametrize("tools", [None, ["echo"]], ids=["unchanged", "allow_list"])
async def test_a_session_continued_on_a_cloud_with_thinking_off(
    tools: list[str] | None,
    make_gateway: GatewayFactory,
    aiohttp_server: AiohttpServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """The model binds its thinking blocks; thinking off: the gateway drops them itself."""
    case, fake = CASES[0], FakeAnthropic()  # Sonnet 5.5 on Bedrock, `between_tools`
    server, cloud = await cloud_server(case, fake, aiohttp_server, monkeypatch, tmp_path)
    events = await two_runs(case, tools, make_gateway, server, fake)
    assert events[-1]["type"] == "final" and events[-1]["outcome"] == "completed", events[-1]
    assert not fake.rejected and not cloud.refusals
    replayed = fake.requests[2]["messages"][1]["content"]  # the first run's turn, sent again
    assert [b["type"] for b in replayed] == ["tool_use"]


@pytest.mark.parametrize(
    "tools",
    [
        None,
        pytest.param(
            ["echo"],
            marks=pytest.mark.xfail(
                strict=True,
                reason="block_binding's beta is not on the clouds' pages, so a replayed "
                "block that no longer fits is the API's 400",
            ),
        ),
    ],
    ids=["unchanged", "allow_list"],
)
async def test_a_session_continued_on_a_cloud_with_thinking_on(
    tools: list[str] | None,
    make_gateway: GatewayFactory,
    aiohttp_server: AiohttpServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    case, fake = CASES[2], FakeAnthropic()  # Opus 5.5 on Vertex, adaptive
    server, cloud = await cloud_server(case, fake, aiohttp_server, monkeypatch, tmp_path)
    events = await two_runs(case, tools, make_gateway, server, fake)
    assert all("block_binding" not in r["thinking"] for r in fake.requests)  # never sent
    warned = [e for e in events if e["type"] == "warning" and e["code"] == "history_dropped"]
    assert [w["dropped"] for w in warned] == [["thinking.block_binding"]]
    assert events[-1]["type"] == "final" and events[-1]["outcome"] == "completed", events[-1]
    assert not fake.rejected and not cloud.refusals
