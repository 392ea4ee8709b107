"""Thinking blocks bound to the conversation (tests/fakes/current_models.py applies the
documented 400): a session continues across a date change, a changed `tools` allow-list,
code execution turned on and an MCP server's tool-list change, on a model that takes
`drop_block` with its thinking (Opus 5.5, thinking on) and on one whose thinking is off
(Sonnet 5.5 `between_tools`: the gateway drops the replayed blocks itself)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import pytest
from aiohttp.test_utils import TestServer

import gateway.runs.planner
from tests.conftest import GatewayFactory, stream
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, Thinking, ToolUse
from tests.fakes.current_models import BINDING_BETA
from tests.fakes.tools import Echo
from tools.registry import ToolRegistry

NOTE = "Let me look that up."


def a_run(fake: FakeAnthropic) -> None:
    fake.add(
        Reply([Thinking("Reasoning."), Thinking(NOTE, progress=True),
               ToolUse("echo", {"text": "a"})]),
        Reply([Thinking("Done reasoning."), Text("Answer.")]),
    )  # fmt: skip


class Renamed(Echo):
    """Echoes its input (a tool an MCP server added)."""

    name = "echo_again"


def change_date(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gateway.runs.planner, "today_text", lambda: "Today's date is 2027-01-01.")


def change_allow_list(body: dict[str, Any]) -> None:
    body["tools"] = ["echo"]


def mcp_list_changed(registry: ToolRegistry) -> None:
    # What an MCP server's notifications/tools/list_changed comes to in the registry.
    registry.replace("mcp:test", [Renamed()])


CASES = ["date", "allow_list", "code_execution", "mcp_list_changed", "unchanged"]


async def continue_session(
    make_gateway: GatewayFactory, fake: FakeAnthropic, registry: ToolRegistry,
    monkeypatch: pytest.MonkeyPatch, model: str, case: str, thinking: Any,
) -> list[dict[str, Any]]:  # fmt: skip
    client = await make_gateway(sdk_model=model)
    a_run(fake)
    first = await stream(client, query="first", thinking=thinking)
    assert first[-1]["type"] == "final", first[-1]
    second_body: dict[str, Any] = {
        "query": "second", "sessionId": first[-1]["session_id"], "thinking": thinking
    }  # fmt: skip
    changes: dict[str, Callable[[], None]] = {
        "date": lambda: change_date(monkeypatch),
        "allow_list": lambda: change_allow_list(second_body),
        "code_execution": lambda: second_body.update(code_execution=True),
        "mcp_list_changed": lambda: mcp_list_changed(registry),
        "unchanged": lambda: None,
    }
    changes[case]()
    a_run(fake)
    return await stream(client, **second_body)


@pytest.mark.parametrize("case", CASES)
async def test_opus_5_5_with_thinking_on_sends_drop_block_on_a_continued_session(
    make_gateway: GatewayFactory, fake: FakeAnthropic, registry: ToolRegistry,
    monkeypatch: pytest.MonkeyPatch, case: str,
) -> None:  # fmt: skip
    events = await continue_session(
        make_gateway, fake, registry, monkeypatch, "claude-opus-5-5", case, True
    )
    assert events[-1]["type"] == "final" and events[-1]["outcome"] == "completed", events[-1]
    assert fake.rejected == []
    third = fake.requests[2]  # the continued session's first call
    assert third["thinking"]["block_binding"] == {"prefix_mismatch_behavior": "drop_block"}
    assert BINDING_BETA in fake.headers[2]["anthropic-beta"]
    # The API dropped the first run's blocks only where the prefix changed.
    dropped = fake.dropped_blocks[2]
    assert bool(dropped) is (case != "unchanged"), dropped
    # The first run itself kept its blocks, replayed within the run as produced.
    assert fake.dropped_blocks[1] == [] and "block_binding" not in fake.requests[1]["thinking"]


@pytest.mark.parametrize("case", CASES)
async def test_sonnet_5_5_between_tools_drops_the_replayed_blocks_itself(
    make_gateway: GatewayFactory, fake: FakeAnthropic, registry: ToolRegistry,
    monkeypatch: pytest.MonkeyPatch, case: str,
) -> None:  # fmt: skip
    events = await continue_session(
        make_gateway, fake, registry, monkeypatch, "claude-sonnet-5-5", case, False
    )
    assert events[-1]["type"] == "final" and events[-1]["outcome"] == "completed", events[-1]
    assert fake.rejected == []
    third = fake.requests[2]
    assert third["thinking"] == {"type": "between_tools"}  # it takes no block_binding
    earlier = [m for m in third["messages"][:-1] if m["role"] == "assistant"]
    assert earlier and not any(
        b["type"] == "thinking" for m in earlier for b in m["content"]
    )  # fmt: skip
    # Within the second run, its own note went back as produced.
    fourth = fake.requests[3]["messages"]
    assert any(b["type"] == "thinking" for b in fourth[-2]["content"])


async def test_the_fake_refuses_a_replayed_block_after_the_tools_changed(
    fake_server: TestServer, fake: FakeAnthropic
) -> None:
    """What the gateway must avoid, with the SDK as the client: the documented 400 after a
    change of `tools`, none when nothing changed, and `drop_block` (with its beta) drops
    the block instead."""
    client = anthropic.AsyncAnthropic(
        api_key="k", base_url=str(fake_server.make_url("")).rstrip("/"), max_retries=0
    )
    tool: Any = {"name": "echo", "description": "d", "input_schema": {"type": "object"}}
    other: Any = {**tool, "name": "echo_again"}
    question: Any = [{"role": "user", "content": "q"}]
    base: Any = {"model": "claude-opus-5-5", "max_tokens": 2_000,
                 "thinking": {"type": "adaptive", "display": "summarized"}}  # fmt: skip
    try:
        fake.add(Reply([Thinking("r"), ToolUse("echo", {"text": "a"})]))
        async with client.messages.stream(**base, tools=[tool], messages=question) as s:
            first = await s.get_final_message()
        produced = [b.model_dump(exclude_none=True) for b in first.content]
        replay: Any = [
            *question, {"role": "assistant", "content": produced},
            {"role": "user", "content": [{"type": "tool_result",
                                          "tool_use_id": produced[1]["id"], "content": "a"}]},
        ]  # fmt: skip
        with pytest.raises(anthropic.BadRequestError, match="bound to a different conversation"):
            async with client.messages.stream(**base, tools=[other], messages=replay) as s:
                await s.get_final_message()
        fake.add(Reply([Text("ok")]), Reply([Text("ok")]))
        async with client.messages.stream(**base, tools=[tool], messages=replay) as s:
            await s.get_final_message()
        dropping = {**base["thinking"], "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
        async with client.beta.messages.stream(
            **{**base, "thinking": dropping}, tools=[other], messages=replay, betas=[BINDING_BETA]
        ) as s:
            await s.get_final_message()
    finally:
        await client.close()
    assert fake.dropped_blocks[-2:] == [[], ["messages.1.content.0"]]


async def test_without_the_models_api_a_binding_model_still_drops_replayed_blocks(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    """The record falls back to safe defaults (no thinking sent), so nothing can carry
    `block_binding`: the run removes the earlier blocks itself."""
    fake.models_status = 503
    client = await make_gateway(sdk_model="claude-opus-5-5")
    a_run(fake)
    first = await stream(client, query="first")
    assert first[-1]["type"] == "final", first[-1]
    a_run(fake)
    body = {"query": "second", "sessionId": first[-1]["session_id"], "tools": ["echo"]}
    events = await stream(client, **body)
    assert events[-1]["type"] == "final", events[-1]
    assert fake.rejected == [] and "thinking" not in fake.requests[2]
    earlier = [m for m in fake.requests[2]["messages"][:-1] if m["role"] == "assistant"]
    assert not any(b["type"] == "thinking" for m in earlier for b in m["content"])
