"""The tool loop's own limits, end to end (gateway -> real SDK -> fake Anthropic over HTTP):
the gateway's context-window stop, repeated calls answered "not run", the gateway-side
clearing of old tool results (when it clears, and when not), and the price of a call whose
answering model has no price."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.context import CLEARED
from gateway.ops.metrics import Metrics
from tests.conftest import GatewayFactory, stream, unmarked
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, ToolUse
from tests.fakes.models import model_info

WINDOW = 50_000
NOT_RUN = "Not run: the same calls were asked for again. Answer with what you have."


def of_type(events: list[dict[str, Any]], kind: str, phase: str | None = None) -> list[Any]:
    return [e for e in events if e["type"] == kind and phase in (None, e.get("phase"))]


@pytest.fixture
def fake() -> FakeAnthropic:
    fake = FakeAnthropic()
    plain = model_info("claude-plain", max_input_tokens=WINDOW, compaction=False, editing=False)
    fake.models["claude-plain"] = plain
    return fake


@pytest.mark.parametrize(("output", "stops"), [(100, True), (99, False)], ids=["full", "one short"])
async def test_a_turn_that_fills_the_window_ends_the_run_before_the_next_call(
    make_gateway: GatewayFactory, fake: FakeAnthropic, output: int, stops: bool
) -> None:
    # The turn's own count: input, cache and output tokens; at the window, no next call.
    client = await make_gateway(sdk_model="claude-plain", gateway_context="off")
    use = Reply(
        [ToolUse("echo", {"text": "a"})],
        input_tokens=WINDOW - 1_100,
        output_tokens=output,
        cache_read=1_000,
    )
    fake.add(use, Reply([Text("Done.")]))
    events = await stream(client, query="x")
    final = events[-1]
    assert len(of_type(events, "tool_call", "tool_result")) == 1  # its tools still ran
    if stops:
        assert (final["outcome"], final["turns"], len(fake.requests)) == ("context_exceeded", 1, 1)
        assert final["result"] == ""
        assert [e["type"] for e in events[-3:]] == ["tool_call", "turn_complete", "final"]
    else:
        assert (final["outcome"], final["turns"], len(fake.requests)) == ("completed", 2, 2)


async def test_a_window_the_model_does_not_name_never_stops_the_run(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    fake.models["claude-unbounded"] = {**model_info("claude-unbounded"), "max_input_tokens": None}
    client = await make_gateway(sdk_model="claude-unbounded", gateway_context="off")
    fake.add(Reply([ToolUse("echo", {"text": "a"})], input_tokens=5_000_000), Reply([Text("k")]))
    events = await stream(client, query="x")
    assert (events[-1]["outcome"], len(fake.requests)) == ("completed", 2)


async def test_repeated_calls_are_answered_not_run(
    make_gateway: GatewayFactory, fake: FakeAnthropic, metrics: Metrics
) -> None:
    # Each round asks for the same three calls, two of them with input that is not JSON.
    client = await make_gateway(sdk_max_turns=10)
    for _ in range(3):
        bad = [ToolUse("echo", raw_json='{"t'), ToolUse("echo", raw_json="[")]
        fake.add(Reply([ToolUse("echo", {"text": "same"}), *bad]))
    fake.add(Reply([Text("giving up")]))
    events = await stream(client, query="x")
    errors = of_type(events, "tool_call", "tool_error")
    assert len(of_type(events, "tool_call", "tool_result")) == 2  # rounds 1 and 2 ran
    not_run = [(e["turn"], e["error"] == NOT_RUN) for e in errors]
    assert not_run == [(1, False)] * 2 + [(2, False)] * 2 + [(3, True)] * 3
    assert all(e["success"] is False and e["tool"]["name"] == "echo" for e in errors)
    assert {e["duration_ms"] for e in errors} == {0.0}  # none of them ran
    executing = of_type(events, "tool_call", "tool_executing")
    assert [(e["turn"], e["tool"]["name"], e["tool"]["input"]) for e in executing] == [
        (1, "echo", {"text": "same"}),
        (2, "echo", {"text": "same"}),
    ]
    results = of_type(events, "tool_call", "tool_result")
    assert [(e["turn"], e["tool"]["id"]) for e in results] == [
        (e["turn"], e["tool"]["id"]) for e in executing
    ]
    uses = [b["id"] for m in fake.requests[3]["messages"][1:4:2] for b in m["content"][:1]]
    assert [e["tool"]["id"] for e in executing] == uses
    answered = unmarked(fake.requests[3]["messages"][-1]["content"])
    assert [(b["content"], b["is_error"]) for b in answered[:3]] == [(NOT_RUN, True)] * 3
    assert [b["tool_use_id"] for b in answered[:3]] == [e["tool"]["id"] for e in errors[4:]]
    assert answered[3]["text"].endswith("no tool rounds are left: answer now from what you have.")
    assert fake.requests[3]["tool_choice"] == {"type": "none"}
    assert events[-1]["outcome"] == "doom_loop" and events[-1]["tool_calls"] == 9
    sample = metrics.registry.get_sample_value
    by_outcome = {
        outcome: sample("sdk_tool_invocations_total", {"tool": "echo", "outcome": outcome})
        for outcome in ("success", "invalid_input", "not_run")
    }
    assert by_outcome == {"success": 2, "invalid_input": 4, "not_run": 3}


def big_rounds(fake: FakeAnthropic, sizes: list[int]) -> None:
    for size in sizes:
        fake.add(Reply([ToolUse("big", {"size": size})]))
    fake.add(Reply([Text("Done.")]))


def results_sent(request: dict[str, Any]) -> list[str]:
    """The tool results' contents a request carried, oldest first."""
    return [
        block["content"]
        for message in request["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "tool_result"
    ]


async def plain_gateway(make_gateway: GatewayFactory, keep: int) -> Any:
    return await make_gateway(
        sdk_model="claude-plain",
        gateway_context_trigger_tokens=1_000,
        sdk_max_turns=6,
        gateway_context_keep_tool_uses=keep,
        gateway_prompt_cache=False,
    )


def letters(size: int) -> str:
    """What the `big` tool returns for `size`."""
    return "".join(chr(ord("a") + i % 26) for i in range(size))


def cleared_tokens(size: int) -> int:
    return (len(orjson.dumps(letters(size))) - len(CLEARED)) // 4


def clears(events: list[dict[str, Any]]) -> list[tuple[int, str, int, int]]:
    return [
        (e["turn"], e["strategy"], e["cleared_input_tokens"], e["cleared_tool_uses"])
        for e in of_type(events, "context_edited")
    ]


async def test_past_the_trigger_the_gateway_clears_all_but_the_newest_results(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    # About 750 tokens a result: two are past the trigger of 1,000, one is not.
    client = await plain_gateway(make_gateway, keep=1)
    big_rounds(fake, [3_000, 3_001, 3_002])
    events = await stream(client, query="x")
    assert events[-1]["outcome"] == "completed"
    gateway_clear = "gateway_clear"
    assert clears(events) == [
        (3, gateway_clear, cleared_tokens(3_000), 1),
        (4, gateway_clear, cleared_tokens(3_001), 1),
    ]
    sent = [results_sent(request) for request in fake.requests]
    assert sent == [
        [],
        [letters(3_000)],
        [CLEARED, letters(3_001)],
        [CLEARED, CLEARED, letters(3_002)],
    ]
    edited = of_type(events, "context_edited")
    starts = of_type(events, "turn_start")
    assert [events.index(e) + 1 for e in edited] == [events.index(s) for s in starts[2:]]
    assert all("context_management" not in request for request in fake.requests)


@pytest.mark.parametrize(
    ("keep", "sizes"),
    [(1, [200, 201, 202]), (5, [3_000, 3_001, 3_002])],
    ids=["under the trigger", "every result kept"],
)
async def test_nothing_to_clear_is_no_clearing(
    make_gateway: GatewayFactory, fake: FakeAnthropic, keep: int, sizes: list[int]
) -> None:
    client = await plain_gateway(make_gateway, keep=keep)
    big_rounds(fake, sizes)
    events = await stream(client, query="x")
    assert events[-1]["outcome"] == "completed" and clears(events) == []
    assert CLEARED not in results_sent(fake.requests[-1])


async def test_the_first_round_is_cleared_when_nothing_is_kept(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await plain_gateway(make_gateway, keep=0)
    big_rounds(fake, [5_000])
    events = await stream(client, query="x")
    assert clears(events) == [(2, "gateway_clear", cleared_tokens(5_000), 1)]
    assert results_sent(fake.requests[1]) == [CLEARED]


async def test_after_clearing_the_run_goes_on_from_the_smaller_size(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    # The second turn counts a full window; the clearing before the third call makes the
    # history small again, so the window does not end the run.
    client = await plain_gateway(make_gateway, keep=1)
    fake.add(
        Reply([ToolUse("big", {"size": 3_000})]),
        Reply([ToolUse("big", {"size": 3_000})], input_tokens=WINDOW),
        Reply([Text("Done.")]),
    )
    events = await stream(client, query="x")
    assert [turn for turn, *_ in clears(events)] == [3]
    assert (events[-1]["outcome"], events[-1]["turns"]) == ("completed", 3)


# USD per million tokens in gateway/prices.json: sonnet 2 in, 10 out; opus 5 in, 25 out.
USAGE: dict[str, Any] = {"input_tokens": 1_000, "output_tokens": 100}
SONNET_COST = (1_000 * 2 + 100 * 10) / 1e6
OPUS_COST = (1_000 * 5 + 100 * 25) / 1e6


@pytest.mark.parametrize(
    ("asked", "answered", "cost", "label"),
    [
        ("claude-sonnet-5", "claude-mystery", SONNET_COST, "claude-sonnet-5"),
        ("claude-sonnet-5", "claude-opus-5", OPUS_COST, "claude-opus-5"),
        ("claude-test-model", "claude-opus-5", OPUS_COST, "claude-opus-5"),
        ("claude-test-model", "claude-mystery", None, None),
    ],
    ids=["answered unpriced", "answered priced", "asked unpriced", "neither priced"],
)
async def test_a_call_is_priced_as_its_answering_model_else_as_the_one_asked(
    make_gateway: GatewayFactory,
    fake: FakeAnthropic,
    metrics: Metrics,
    asked: str,
    answered: str,
    cost: float | None,
    label: str | None,
) -> None:
    client = await make_gateway(sdk_model=asked)
    fake.add(Reply([Text("priced")], model=answered, **USAGE))
    events = await stream(client, query="x")
    [complete] = of_type(events, "turn_complete")
    assert complete["cost_usd"] == pytest.approx(cost, abs=1e-12)
    assert events[-1]["total_cost_usd"] == pytest.approx(cost, abs=1e-12)
    counted = {
        model: metrics.registry.get_sample_value(
            "claude_cost_usd_total", {"model": model, "key": "anonymous"}
        )
        for model in {asked, answered}
    }
    assert counted == {m: (pytest.approx(cost, abs=1e-12) if m == label else None) for m in counted}
