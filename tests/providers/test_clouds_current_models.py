"""The current models (Sonnet, Opus and Haiku 5.5) on Bedrock and Vertex: the default is
named, recorded and priced on each cloud; a tool run through each cloud costs the cloud's
published price (Haiku 5.5's long-prompt tier included); its notes come back as
"progress" where the cloud's record says the model returns them, else as reasoning."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pytest_aiohttp import AiohttpServer

from gateway import pricing
from gateway.cloud_ids import anthropic_id
from gateway.providers.anthropic.lineup import CURRENT
from gateway.providers.cloud_models import cloud_record
from gateway.settings import Settings
from tests.conftest import GatewayFactory, stream
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, Thinking, ToolUse
from tests.providers.clouds_support import bare_aws, phases
from tests.providers.current_clouds import (
    ADAPTIVE,
    BETWEEN,
    CASES,
    DISABLED,
    NOTE,
    REASONING,
    Case,
    cloud_server,
    gateway_settings,
)


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
    # The model it replaced is legacy on the clouds too, and names it.
    legacy = cloud_record("vertex/global/claude-sonnet-5")
    assert legacy.legacy_successor == "claude-sonnet-5-5" and legacy.lifecycle == "active"
    assert "claude-sonnet-5-5" in (legacy.lifecycle_note() or "")


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
