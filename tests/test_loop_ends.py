"""How the tool loop ends where it decides itself, end to end (gateway -> real SDK -> fake
Anthropic over HTTP): a history still over the window after the gateway's clearing, the
`pause_turn` continuations it allows, the doom loop's and max_turns' warnings; and what a
tool is told of its call."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestServer
from pytest_aiohttp import AiohttpClient

from gateway.http.app import create_app
from gateway.ops.metrics import Metrics
from gateway.runs.tools import StaticToolset
from tests.conftest import GatewayFactory, settings_for, stream
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, ToolUse
from tests.fakes.models import model_info
from tests.fakes.tools import Echo
from tests.test_loop_limits import cleared_tokens, clears
from tools.base import Tool, ToolContext, ToolInput
from tools.registry import ToolRegistry

TINY_WINDOW = 1_200  # one `big` result of 5,000 characters is over it (about 1,250 tokens)


@pytest.fixture
def fake() -> FakeAnthropic:
    fake = FakeAnthropic()
    tiny = model_info("claude-tiny", max_input_tokens=TINY_WINDOW, compaction=False, editing=False)
    fake.models["claude-tiny"] = tiny
    return fake


async def test_a_history_over_the_window_after_clearing_ends_the_run_with_the_clearing(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    # Two results in one round: the older is cleared, the newer alone is over the window.
    client = await make_gateway(sdk_model="claude-tiny", gateway_context_keep_tool_uses=1)
    two = Reply([ToolUse("big", {"size": 5_000}), ToolUse("big", {"size": 4_999})])
    fake.add(two, Reply([Text("never asked for")]))
    events = await stream(client, query="x")
    assert clears(events) == [(2, "gateway_clear", cleared_tokens(5_000), 1)]
    assert [e["type"] for e in events[-3:]] == ["turn_complete", "context_edited", "final"]
    final = events[-1]
    assert (final["outcome"], final["turns"], len(fake.requests)) == ("context_exceeded", 1, 1)
    assert not fake.rejected


@pytest.mark.parametrize(("max_turns", "calls"), [(1, 7), (2, 8)])
async def test_pause_turn_is_continued_five_times_past_the_tool_rounds(
    make_gateway: GatewayFactory, fake: FakeAnthropic, max_turns: int, calls: int
) -> None:
    fake.add(*[Reply([Text(f"part {n}")], stop_reason="pause_turn") for n in range(10)])
    client = await make_gateway(sdk_max_turns=max_turns)
    events = await stream(client, query="x")
    final = events[-1]
    assert (final["turns"], len(fake.requests)) == (calls, calls)
    assert final["stop_reason"] == "pause_turn" and final["outcome"] == "completed"


def warnings(events: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    return [(e["code"], e["message"], e["turns"]) for e in events if e["type"] == "warning"]


async def test_the_doom_loop_warning_says_what_happened(
    make_gateway: GatewayFactory, fake: FakeAnthropic, metrics: Metrics
) -> None:
    client = await make_gateway(sdk_max_turns=10)
    fake.add(*[Reply([ToolUse("echo", {"text": "same"})]) for _ in range(3)], Reply([Text("k")]))
    events = await stream(client, query="x")
    message = "The model asked for the same tool calls 3 turns in a row"
    assert warnings(events) == [("doom_loop", message, 3)]
    assert metrics.registry.get_sample_value("sdk_max_turns_reached_total") == 0


async def test_different_calls_in_between_start_the_count_again(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway(sdk_max_turns=10)
    texts = ["a", "a", "b", "a", "a", "a"]
    fake.add(*[Reply([ToolUse("echo", {"text": t})]) for t in texts], Reply([Text("k")]))
    events = await stream(client, query="x")
    assert [(code, turns) for code, _, turns in warnings(events)] == [("doom_loop", 6)]
    assert events[-1]["outcome"] == "doom_loop" and len(fake.requests) == 7


async def test_the_max_turns_warning_names_the_turn_and_is_counted(
    make_gateway: GatewayFactory, fake: FakeAnthropic, metrics: Metrics
) -> None:
    client = await make_gateway(sdk_max_turns=2)
    fake.add(*[Reply([ToolUse("echo", {"text": t})]) for t in "ab"], Reply([Text("k")]))
    events = await stream(client, query="x")
    assert warnings(events) == [("max_turns", "Max turns reached", 2)]
    assert metrics.registry.get_sample_value("sdk_max_turns_reached_total") == 1


class WhoInput(ToolInput):
    pass


class Who(Tool[WhoInput]):
    """Say which call this is."""

    name = "who"
    input_model = WhoInput

    async def run(self, args: WhoInput, ctx: ToolContext) -> str:
        return f"{ctx.tool_use_id} {ctx.run_id} {ctx.services['note']}"


async def test_a_tool_is_told_its_call_its_run_and_the_services(
    fake: FakeAnthropic, fake_server: TestServer, metrics: Metrics, aiohttp_client: AiohttpClient
) -> None:
    registry = ToolRegistry([Who(), Echo()], timeout_s=1.0)
    toolset = StaticToolset(registry, services={"note": "shared"}, backends={"test": "local"})
    app = create_app(settings_for(fake_server), toolset=toolset, metrics=metrics)
    client = await aiohttp_client(app)
    fake.add(Reply([ToolUse("who", {})]), Reply([Text("k")]))
    events = await stream(client, query="x")
    [result] = [e for e in events if e.get("phase") == "tool_result"]
    assert result["preview"] == f"{result['tool']['id']} {events[-1]['run_id']} shared"


async def test_the_deltas_join_to_the_result_with_one_gap_between_turns_with_text(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    # Text, then a round without text, then text in two blocks: one gap, before "Then".
    client = await make_gateway()
    fake.add(
        Reply([Text("First.", 2), ToolUse("echo", {"text": "a"})]),
        Reply([ToolUse("echo", {"text": "b"})]),
        Reply([Text("Then", 2), Text(" more.", 3)]),
    )
    events = await stream(client, query="x")
    deltas = [e["text"] for e in events if e["type"] == "delta"]
    assert "".join(deltas) == events[-1]["result"] == "First.\n\nThen more."
    assert deltas.count("\n\n") == 1 and deltas[deltas.index("\n\n") + 1].startswith("Th")
