"""One answer continued after `pause_turn` has no gap inside; a refusal's
`stop_details.category` reaches `final`, `/api/research` and the metrics."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.ops.metrics import Metrics
from tests.conftest import GatewayFactory, stream
from tests.fakes.anthropic import FakeAnthropic, Reply, ServerToolUse, Text, ToolUse

SEARCH = ServerToolUse("web_search", {"query": "nvda 10-k"}, [])


def joined(events: list[dict[str, Any]]) -> str:
    return "".join(e["text"] for e in events if e["type"] == "delta")


@pytest.mark.parametrize(
    ("replies", "result"),
    [
        # One answer, paused once: no gap inside it.
        ([Reply([Text("…searched the filings")], stop_reason="pause_turn"),
          Reply([Text(" and found the annual report.")])],
         "…searched the filings and found the annual report."),
        # A tool round, then an answer paused twice: one gap, between the two turns' texts.
        ([Reply([Text("Looking."), ToolUse("echo", {"text": "a"})]),
          Reply([Text("Part one")], stop_reason="pause_turn"),
          Reply([Text(", part two")], stop_reason="pause_turn"),
          Reply([Text(", part three.")])],
         "Looking.\n\nPart one, part two, part three."),
        # A paused turn with no text of its own (a server search): its continuation is the
        # first text of that answer, so the gap comes before it.
        ([Reply([Text("Looking."), ToolUse("echo", {"text": "a"})]),
          Reply([SEARCH], stop_reason="pause_turn"),
          Reply([Text("Found it.")])],
         "Looking.\n\nFound it."),
    ],
)  # fmt: skip
async def test_an_answer_continued_after_pause_turn_has_no_gap(
    gateway: Any, fake: FakeAnthropic, replies: list[Reply], result: str
) -> None:
    fake.add(*replies)
    events = await stream(gateway, query="x")
    final = events[-1]
    assert final["type"] == "final" and final["outcome"] == "completed", final
    assert final["result"] == result
    assert joined(events) == final["result"]  # the deltas join to the result, byte for byte


async def test_a_refusal_carries_its_category(
    make_gateway: GatewayFactory, fake: FakeAnthropic, metrics: Metrics
) -> None:
    client = await make_gateway()
    details = {"type": "refusal", "category": "cyber", "explanation": "Exploit development."}
    fake.add(Reply([Text("I can't help with that.")], stop_reason="refusal",
                   stop_details=details))  # fmt: skip
    events = await stream(client, query="x")
    final = events[-1]
    assert final["outcome"] == "refusal"
    assert final["details"] == {"category": "cyber", "explanation": "Exploit development."}
    fake.add(
        Reply(
            [Text("No.")],
            stop_reason="refusal",
            stop_details={"type": "refusal", "category": None, "explanation": None},
        )
    )
    body = await (await client.post("/api/research", json={"query": "x"})).json()
    assert body["outcome"] == "refusal" and body["details"] == {
        "category": None, "explanation": None
    }  # fmt: skip
    sample = metrics.registry.get_sample_value
    labels = {"model": "claude-test-model"}
    assert sample("gateway_refusals_total", {**labels, "category": "cyber"}) == 1
    assert sample("gateway_refusals_total", {**labels, "category": "none"}) == 1
    # Not a refusal: no details.
    fake.add(Reply([Text("Sure.")]))
    assert (await stream(client, query="x"))[-1]["details"] is None


async def test_a_structured_answer_continued_after_pause_turn_is_one_value(
    gateway: Any, fake: FakeAnthropic
) -> None:
    schema = {"type": "object", "properties": {"revenue": {"type": "number"}}}
    fake.add(Reply([Text('{"reve')], stop_reason="pause_turn"), Reply([Text('nue": 130.5}')]))
    body = {"query": "x", "output_format": {"type": "json_schema", "schema": schema}}
    final = (await stream(gateway, **body))[-1]
    assert final["result"] == '{"revenue": 130.5}'
    assert final["structured"] == {"revenue": 130.5}
