"""The tool loop end to end: gateway -> real SDK -> fake Anthropic over HTTP."""

from __future__ import annotations

import json
from typing import Any

from aiohttp.test_utils import TestClient

from tests.conftest import stream, tool_results, types, unmarked
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, Thinking, ToolUse
from tests.fakes.tools import Sleep

Client = TestClient[Any, Any]


def tool_events(events: list[dict[str, Any]], phase: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "tool_call" and e["phase"] == phase]


async def test_text_only(gateway: Client, fake: FakeAnthropic) -> None:
    fake.add(Reply([Text("Hello there, researcher.")]))
    events = await stream(gateway, query="hi")
    assert types(events)[:3] == ["system_info", "system_init", "turn_start"]
    assert types(events)[-2:] == ["turn_complete", "final"]
    assert "".join(e["text"] for e in events if e["type"] == "delta") == "Hello there, researcher."
    final = events[-1]
    assert final["outcome"] == "completed" and final["stop_reason"] == "end_turn"
    assert final["result"] == "Hello there, researcher."
    assert final["turns"] == 1 and final["tool_calls"] == 0
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert {e["run_id"] for e in events} == {final["run_id"]}
    sent = fake.requests[0]
    assert sent["stream"] is True
    assert sent["system"][0] == {
        "type": "text", "text": "You are a test.", "cache_control": {"type": "ephemeral"}
    }  # fmt: skip
    assert sent["system"][1]["text"].startswith("Today's date is ")
    assert unmarked(sent["messages"]) == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    ]
    auth = fake.headers[0]
    assert "sk-test" in (
        auth.get("x-api-key", ""),
        auth.get("authorization", "").removeprefix("Bearer "),
    )


async def test_one_tool_with_fragmented_input(gateway: Client, fake: FakeAnthropic) -> None:
    text = "fragmented " * 20
    fake.add(
        Reply([Text("Let me check."), ToolUse("echo", {"text": text}, fragment=3)]),
        Reply([Text("Done.")]),
    )
    events = await stream(gateway, query="echo please")
    deltas = tool_events(events, "tool_input_delta")
    assert len(deltas) > 50
    assert json.loads("".join(d["partial_json"] for d in deltas)) == {"text": text}
    [use] = tool_events(events, "tool_use")
    assert use["tool"]["input"] == {"text": text} and use["tool"]["name"] == "echo"
    [result] = tool_events(events, "tool_result")
    assert result["success"] is True and result["preview"] == f"echo: {text}"
    assert result["bytes"] == len(f"echo: {text}") and result["truncated"] is False
    assert events[-1]["outcome"] == "completed" and events[-1]["turns"] == 2
    assert events[-1]["result"] == "Let me check.\n\nDone."
    second = fake.requests[1]["messages"]
    assert second[1]["role"] == "assistant"
    assert second[1]["content"][1] == {
        "type": "tool_use", "id": use["tool"]["id"], "name": "echo", "input": {"text": text}
    }  # fmt: skip
    assert unmarked(second[2]) == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": use["tool"]["id"],
                     "content": f"echo: {text}"},
                    {"type": "text", "text": "Tool round 1 of 5 is done; 4 rounds left."}],
    }  # fmt: skip


async def test_three_parallel_tools_keep_order(gateway: Client, fake: FakeAnthropic) -> None:
    fake.add(
        Reply([ToolUse("sleep", {"seconds": 0.3}), ToolUse("sleep", {"seconds": 0.05}),
               ToolUse("echo", {"text": "x"})]),
        Reply([Text("ok")]),
    )  # fmt: skip
    events = await stream(gateway, query="go")
    ids = [e["tool"]["id"] for e in tool_events(events, "tool_use")]
    finished = [e["tool"]["id"] for e in tool_events(events, "tool_result")]
    assert sorted(finished) == sorted(ids) and finished != ids  # completion order, live
    results = tool_results(fake.requests[1]["messages"][-1])
    assert [r["tool_use_id"] for r in results] == ids  # history keeps the model's order
    durations = [e["duration_ms"] for e in tool_events(events, "tool_result")]
    assert max(durations) < 600  # concurrent: not 0.35 s + ... in sequence


async def test_three_turn_chain(gateway: Client, fake: FakeAnthropic) -> None:
    fake.add(
        Reply([ToolUse("echo", {"text": "1"})]),
        Reply([ToolUse("echo", {"text": "2"})]),
        Reply([Text("chain done")], input_tokens=30, output_tokens=7, cache_read=4),
    )
    events = await stream(gateway, query="chain")
    assert [e["turn"] for e in events if e["type"] == "turn_start"] == [1, 2, 3]
    assert len(fake.requests) == 3 and len(fake.requests[2]["messages"]) == 5
    final = events[-1]
    assert final["turns"] == 3 and final["tool_calls"] == 2
    assert final["usage"] == {
        "input_tokens": 50, "output_tokens": 17,
        "cache_read_input_tokens": 4, "cache_creation_input_tokens": 0,
    }  # fmt: skip


async def test_thinking_signatures_go_back_intact(make_gateway: Any, fake: FakeAnthropic) -> None:
    client = await make_gateway(sdk_thinking_budget=2048)
    signature = "EqQBCkgIARABGAIiQL" + "x" * 200
    fake.add(
        Reply([Thinking("I should echo.", signature=signature), ToolUse("echo", {"text": "t"})]),
        Reply([Text("thought and done")]),
    )
    events = await stream(client, query="think")
    assert types(events)[3:7] == [
        "thinking_start", "thinking", "thinking_signature", "thinking_complete"
    ]  # fmt: skip
    assert [e["signature"] for e in events if e["type"] == "thinking_signature"] == [signature]
    assert fake.requests[0]["thinking"] == {"type": "adaptive"}  # what this model takes
    block = fake.requests[1]["messages"][1]["content"][0]
    assert block == {"type": "thinking", "thinking": "I should echo.", "signature": signature}


async def test_invalid_json_input_becomes_error_result(
    gateway: Client, fake: FakeAnthropic
) -> None:
    fake.add(Reply([ToolUse("echo", raw_json='{"text": "unterminated')]), Reply([Text("sorry")]))
    events = await stream(gateway, query="x")
    [error] = tool_events(events, "tool_error")
    assert "not valid JSON" in error["error"] and error["success"] is False
    result = fake.requests[1]["messages"][-1]["content"][0]
    assert result["is_error"] is True and "not valid JSON" in result["content"]
    assert fake.requests[1]["messages"][1]["content"][0]["input"] == {}
    assert events[-1]["outcome"] == "completed"


async def test_schema_violation_unknown_tool_failure_and_crash(
    gateway: Client, fake: FakeAnthropic
) -> None:
    fake.add(
        Reply([ToolUse("echo", {"txt": 1}), ToolUse("nope", {}), ToolUse("fail", {}),
               ToolUse("crash", {}), ToolUse("echo", {"text": "fine"})]),
        Reply([Text("handled")]),
    )  # fmt: skip
    events = await stream(gateway, query="x")
    errors = {e["tool"]["name"]: e["error"] for e in tool_events(events, "tool_error")}
    assert "Invalid input for tool 'echo'" in errors["echo"] and "text" in errors["echo"]
    assert "Unknown tool 'nope'" in errors["nope"] and "echo" in errors["nope"]
    assert errors["fail"] == "No company matches 'Acme'; try a ticker"
    assert "RuntimeError" in errors["crash"]
    results = tool_results(fake.requests[1]["messages"][-1])
    assert [r.get("is_error", False) for r in results] == [True, True, True, True, False]
    assert events[-1]["outcome"] == "completed"


async def test_tool_past_its_timeout(
    gateway: Client, fake: FakeAnthropic, sleep_tool: Sleep
) -> None:
    fake.add(Reply([ToolUse("sleep", {"seconds": 30})]), Reply([Text("too slow")]))
    events = await stream(gateway, query="x")
    [error] = tool_events(events, "tool_error")
    assert "timed out after 1 s" in error["error"] and 900 < error["duration_ms"] < 3000
    assert sleep_tool.cancelled == 1
    assert fake.requests[1]["messages"][-1]["content"][0]["is_error"] is True


async def test_result_cap_keeps_head_and_tail(gateway: Client, fake: FakeAnthropic) -> None:
    fake.add(Reply([ToolUse("big", {"size": 20_000})]), Reply([Text("big")]))
    events = await stream(gateway, query="x")
    [result] = tool_events(events, "tool_result")
    assert result["truncated"] is True and len(result["preview"]) == 2_000
    [warning] = [e for e in events if e["type"] == "warning"]
    assert warning["code"] == "tool_result_truncated"
    sent = fake.requests[1]["messages"][-1]["content"][0]["content"]
    assert len(sent) <= 5_000 and sent.startswith("abcdef") and "truncated" in sent
    assert sent.endswith("".join(chr(ord("a") + i % 26) for i in range(19_990, 20_000)))


async def test_max_turns_wraps_up(make_gateway: Any, fake: FakeAnthropic) -> None:
    client = await make_gateway()
    fake.add(
        Reply([ToolUse("echo", {"text": "1"})]),
        Reply([ToolUse("echo", {"text": "2"})]),
        Reply([Text("Here is what I found.")]),
    )
    events = await stream(client, query="x", max_turns=2)
    [warning] = [e for e in events if e["type"] == "warning"]
    assert warning["code"] == "max_turns" and warning["message"] == "Max turns reached"
    assert len(tool_events(events, "tool_result")) == 2  # the last round's tools still run
    assert tool_events(events, "tool_error") == []
    assert len(fake.requests) == 3
    assert fake.requests[1]["tool_choice"] == {"type": "auto"}
    assert fake.requests[2]["tool_choice"] == {"type": "none"}
    notes = [unmarked(r["messages"][-1]["content"][-1]["text"]) for r in fake.requests[1:]]
    assert notes == [
        "Tool round 1 of 2 is done; 1 round left.",
        "Tool round 2 of 2 is done; no tool rounds are left: answer now from what you have.",
    ]
    final = events[-1]
    assert final["outcome"] == "max_turns" and final["turns"] == 3
    assert final["result"].endswith("Here is what I found.")


async def test_pause_turn_is_resent(gateway: Client, fake: FakeAnthropic) -> None:
    fake.add(Reply([Text("part one")], stop_reason="pause_turn"), Reply([Text(" part two")]))
    events = await stream(gateway, query="x")
    assert len(fake.requests) == 2
    assert unmarked(fake.requests[1]["messages"][-1]) == {
        "role": "assistant", "content": [{"type": "text", "text": "part one"}]
    }  # fmt: skip
    assert events[-1]["outcome"] == "completed" and events[-1]["turns"] == 2


async def test_max_tokens_and_refusal_outcomes(gateway: Client, fake: FakeAnthropic) -> None:
    fake.add(Reply([Text("cut")], stop_reason="max_tokens"))
    assert (await stream(gateway, query="x"))[-1]["outcome"] == "max_tokens"
    fake.add(Reply([Text("no")], stop_reason="refusal"))
    assert (await stream(gateway, query="x"))[-1]["outcome"] == "refusal"
    fake.add(Reply([Text("full")], stop_reason="model_context_window_exceeded"))
    assert (await stream(gateway, query="x"))[-1]["outcome"] == "context_exceeded"


async def test_doom_loop_is_stopped(make_gateway: Any, fake: FakeAnthropic) -> None:
    client = await make_gateway(sdk_max_turns=10)
    fake.add(*[Reply([ToolUse("echo", {"text": "same"})]) for _ in range(3)])
    fake.add(Reply([Text("giving up")]))
    events = await stream(client, query="x")
    assert [e["code"] for e in events if e["type"] == "warning"] == ["doom_loop"]
    assert events[-1]["outcome"] == "doom_loop" and len(fake.requests) == 4
