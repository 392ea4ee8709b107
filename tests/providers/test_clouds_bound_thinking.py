"""A session continued on a cloud, on a 5.5 model that binds its thinking blocks to the
conversation (tests/fakes/current_models.py applies the documented 400): with thinking
off the gateway drops the replayed blocks itself; with thinking on too, as `block_binding`
is not sent there (its beta is not on the clouds' pages)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer
from pytest_aiohttp import AiohttpServer

from tests.conftest import GatewayFactory, stream
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, Thinking, ToolUse
from tests.providers.current_clouds import (
    CASES,
    NOTE,
    REASONING,
    Case,
    cloud_server,
    gateway_settings,
)


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


@pytest.mark.parametrize("tools", [None, ["echo"]], ids=["unchanged", "allow_list"])
async def test_a_session_continued_on_a_cloud_with_thinking_on(
    tools: list[str] | None,
    make_gateway: GatewayFactory,
    aiohttp_server: AiohttpServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """Thinking on, and no `block_binding` on the clouds: the gateway drops the replayed
    blocks itself, so a continuation whose tools changed is not the API's 400."""
    case, fake = CASES[2], FakeAnthropic()  # Opus 5.5 on Vertex, adaptive
    server, cloud = await cloud_server(case, fake, aiohttp_server, monkeypatch, tmp_path)
    events = await two_runs(case, tools, make_gateway, server, fake)
    assert all("block_binding" not in r["thinking"] for r in fake.requests)  # never sent
    assert not [e for e in events if e["type"] == "warning" and e["code"] == "history_dropped"]
    assert events[-1]["type"] == "final" and events[-1]["outcome"] == "completed", events[-1]
    assert not fake.rejected and not cloud.refusals
    replayed = fake.requests[2]["messages"][1]["content"]  # the first run's turn, sent again
    assert [b["type"] for b in replayed] == ["tool_use"]
    this_run = fake.requests[3]["messages"][-2]["content"]  # this run's own turn keeps them
    assert [b["type"] for b in this_run] == ["thinking", "thinking", "tool_use"]
