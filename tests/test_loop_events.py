"""What the tool loop says of a run, end to end (gateway -> real SDK -> fake Anthropic over
HTTP): the opening events, the answering model in `final`, usage beyond the tokens summed
over turns, a result cut to the cap, and a tool's result in blocks."""

from __future__ import annotations

import gc
import types
from typing import Any

from aiohttp.test_utils import TestServer
from pytest_aiohttp import AiohttpClient

from gateway.http.app import create_app
from gateway.ops.metrics import Metrics
from gateway.pricing import WEB_SEARCH_KEY
from gateway.runs.loop import run_loop
from gateway.runs.tools import StaticToolset
from tests.conftest import GatewayFactory, iter_events, settings_for, stream, unmarked
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, ToolUse
from tools.base import RichResult, Tool, ToolContext, ToolInput
from tools.registry import ToolRegistry


def first(events: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(e for e in events if e["type"] == kind)


async def test_the_opening_events_and_final_name_the_run(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway()
    fake.add(Reply([Text("hi")], model="claude-answered"))
    events = await stream(client, query="x", tools=["echo", "big"])
    info, init, final = first(events, "system_info"), first(events, "system_init"), events[-1]
    session = final["session_id"]
    assert (info["model"], info["session_id"], info["tools"]) == ("claude-test-model", session, 2)
    assert info["upstream"] == "anthropic"
    assert (init["model"], init["session_id"], init["tools"]) == ("claude-test-model", session, 2)
    assert sorted(tool["name"] for tool in fake.requests[0]["tools"]) == ["big", "echo"]
    assert final["model"] == "claude-answered"


async def test_usage_beyond_the_tokens_is_summed_over_turns(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway()
    searches = [{"server_tool_use": {"web_search_requests": n}} for n in (2, 3)]
    fake.add(
        Reply([Text("a"), ToolUse("echo", {"text": "a"})], usage_extra=searches[0]),
        Reply([Text("b")], usage_extra=searches[1]),
    )
    events = await stream(client, query="x")
    turns = [e["usage"].get(WEB_SEARCH_KEY) for e in events if e["type"] == "turn_complete"]
    assert turns == [2, 3] and events[-1]["usage"][WEB_SEARCH_KEY] == 5


async def test_a_result_cut_to_the_cap_is_said_once_with_its_size(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway()  # results are capped at 5,000 characters
    fake.add(Reply([ToolUse("big", {"size": 9_000})]), Reply([Text("k")]))
    events = await stream(client, query="x")
    [sent] = [b for b in fake.requests[1]["messages"][-1]["content"] if b["type"] == "tool_result"]
    message = f"Result of big cut to {len(sent['content']):,} characters"
    warnings = [(e["code"], e["message"], e["turns"]) for e in events if e["type"] == "warning"]
    assert warnings == [("tool_result_truncated", message, 1)]


class BlocksInput(ToolInput):
    pass


BLOCKS = [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]


class Blocks(Tool[BlocksInput]):
    """Answer in two text blocks."""

    name = "blocks"
    input_model = BlocksInput

    async def run(self, args: BlocksInput, ctx: ToolContext) -> RichResult:
        return RichResult(BLOCKS)


async def test_a_result_in_blocks_goes_back_as_blocks(
    fake: FakeAnthropic, fake_server: TestServer, metrics: Metrics, aiohttp_client: AiohttpClient
) -> None:
    toolset = StaticToolset(ToolRegistry([Blocks()], timeout_s=1.0), backends={"test": "local"})
    client = await aiohttp_client(
        create_app(settings_for(fake_server), toolset=toolset, metrics=metrics)
    )
    fake.add(Reply([ToolUse("blocks", {})]), Reply([Text("k")]))
    events = await stream(client, query="x")
    [result] = unmarked(fake.requests[1]["messages"][-1]["content"][:1])
    assert result["content"] == BLOCKS and events[-1]["outcome"] == "completed"


async def test_each_turn_is_framed_with_what_it_did(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway(sdk_max_turns=4)
    fake.add(
        Reply([ToolUse("echo", {"text": "a"}), ToolUse("echo", {"text": "b"})], input_tokens=7),
        Reply([Text("done")], input_tokens=9, output_tokens=3),
    )
    events = await stream(client, query="x")
    starts = [(e["turn"], e["max_turns"]) for e in events if e["type"] == "turn_start"]
    assert starts == [(1, 4), (2, 4)]
    completes = [
        (e["turn"], e["tool_count"], e["stop_reason"], e["usage"]["input_tokens"], e["upstream"])
        for e in events
        if e["type"] == "turn_complete"
    ]
    assert completes == [(1, 2, "tool_use", 7, "anthropic"), (2, 0, "end_turn", 9, "anthropic")]


async def test_tool_calls_in_a_turn_that_ended_otherwise_are_not_run(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway()
    fake.add(Reply([Text("cut"), ToolUse("echo", {"text": "a"})], stop_reason="max_tokens"))
    events = await stream(client, query="x")
    ran = ("tool_executing", "tool_result", "tool_error")
    assert not [e for e in events if e["type"] == "tool_call" and e["phase"] in ran]
    assert (events[-1]["outcome"], events[-1]["turns"], len(fake.requests)) == ("max_tokens", 1, 1)


async def test_the_run_holds_no_event_it_logged(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    """An event is serialised into the log and let go: the run's frame held its opening
    events (`system_info`, `system_init`) for as long as the stream was open."""
    fake.add(Reply([Text("word " * 40, chunk=5)], delay_s=0.01))
    client = await make_gateway()
    response = await client.post("/api/stream", json={"query": "x"})
    async for event in iter_events(response):
        if event["type"] == "delta":
            break
    loops = [
        o for o in gc.get_objects()
        if isinstance(o, types.CoroutineType) and o.cr_code is run_loop.__code__
    ]  # fmt: skip
    assert len(loops) == 1 and loops[0].cr_frame is not None  # mid-stream
    held = [v for v in loops[0].cr_frame.f_locals.values() if isinstance(v, dict) and "seq" in v]
    assert held == []
    await response.read()
