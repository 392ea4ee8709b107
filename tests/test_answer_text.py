"""The concatenation of a run's `delta` texts is `final.result`, byte for byte, whatever
the model's turns hold (texts split in blocks and chunks, tool rounds without text,
thinking, a last turn without text): a property over runs scripted on the fake upstream.
(The demo's runs: tests/demo/test_answer_text.py.)"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from gateway.fold import fold
from gateway.http.app import create_app
from gateway.ops.metrics import Metrics
from gateway.runs.tools import StaticToolset
from tests.conftest import read_events, settings_for
from tests.fakes.anthropic import Block, FakeAnthropic, Reply, Text, Thinking, ToolUse
from tests.fakes.tools import Echo
from tools.registry import ToolRegistry

TEXT = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=30)
TEXTS = st.lists(st.builds(Text, TEXT, st.integers(1, 12)), max_size=3)
TURN = st.tuples(st.booleans(), TEXTS)  # (thinks, its text blocks)
RUN = st.tuples(st.lists(TURN, max_size=4), TURN)  # tool rounds, then the answer


def replies(run: tuple[list[tuple[bool, list[Text]]], tuple[bool, list[Text]]]) -> list[Reply]:
    rounds, (thinks, texts) = run
    out: list[Reply] = []
    for index, (round_thinks, round_texts) in enumerate(rounds):
        blocks: list[Block] = [Thinking("hmm")] if round_thinks else []
        blocks += [*round_texts, ToolUse("echo", {"text": str(index)})]
        out.append(Reply(blocks))
    out.append(Reply([*([Thinking("so")] if thinks else []), *texts]))
    return out


async def run_once(script: list[Reply]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    fake = FakeAnthropic(script)
    upstream = TestServer(fake.app(), host="127.0.0.1")
    await upstream.start_server()
    gateway_settings = settings_for(upstream, sdk_max_turns=10, sdk_thinking_budget=2048)
    toolset = StaticToolset(ToolRegistry([Echo()], timeout_s=5.0), backends={"test": "local"})
    app = create_app(gateway_settings, toolset=toolset, metrics=Metrics(CollectorRegistry()))
    client: TestClient[Any, Any] = TestClient(TestServer(app, host="127.0.0.1"))
    await client.start_server()
    try:
        events = await read_events(await client.post("/api/stream", json={"query": "q"}))
        research = await (await client.post("/api/research", json={"query": "q"})).json()
    finally:
        await client.close()
        await upstream.close()
    return events, research


@settings(max_examples=40, deadline=None, database=None, derandomize=True,
          suppress_health_check=list(HealthCheck))  # fmt: skip
@given(RUN)
def test_deltas_join_to_the_final_result(run: Any) -> None:
    script = replies(run)
    # Twice: the stream, then /api/research (its own run of the same script).
    events, research = asyncio.run(run_once([*script, *replies(run)]))
    final = events[-1]
    assert final["type"] == "final", final
    joined = "".join(e["text"] for e in events if e["type"] == "delta")
    assert joined == final["result"]
    assert fold(events)["text"] == final["result"]
    assert research["text"] == final["result"]
    # Nothing but the blank line between turns was added to what the model wrote.
    written = [
        "".join(b.text for b in r.blocks if isinstance(b, Text)) for r in script
    ]  # fmt: skip
    assert final["result"] == "\n\n".join(text for text in written if text)
