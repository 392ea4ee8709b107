"""Runs outlive connections: disconnect, re-attach, cancel; and /api/research as a fold."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp.test_utils import TestClient

from gateway.fold import fold
from tests.conftest import iter_events, read_events, stream, unmarked
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, ToolUse
from tests.fakes.tools import Sleep

Client = TestClient[Any, Any]
SLOW = "word " * 200


async def wait_for(predicate: Any, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.01)


async def test_disconnect_cancels_after_grace(gateway: Client, fake: FakeAnthropic) -> None:
    fake.add(Reply([Text(SLOW, chunk=5)], delay_s=0.02))
    response = await gateway.post("/api/stream", json={"query": "x"})
    run_id = ""
    async for event in iter_events(response):
        run_id = event.get("run_id", run_id)
        if event["type"] == "delta":
            break
    response.close()  # the client goes away mid-stream
    async with asyncio.timeout(3):  # grace 0.3 s, then the upstream request is closed
        await fake.disconnected.wait()
    assert fake.disconnects == 1 and len(fake.requests) == 1
    replay = await gateway.get(f"/api/stream/{run_id}")
    events = await read_events(replay)
    assert events[-1]["type"] == "final" and events[-1]["outcome"] == "client_disconnected"


async def test_disconnect_cancels_running_tools(
    gateway: Client, fake: FakeAnthropic, sleep_tool: Sleep
) -> None:
    fake.add(Reply([ToolUse("sleep", {"seconds": 0.9})]), Reply([Text("never")]))
    response = await gateway.post("/api/stream", json={"query": "x"})
    async for event in iter_events(response):
        if event["type"] == "tool_call" and event["phase"] == "tool_executing":
            break
    response.close()
    await wait_for(lambda: sleep_tool.cancelled == 1, timeout=2)
    await asyncio.sleep(0.3)
    assert len(fake.requests) == 1  # no further model call after the cancel


async def test_reattach_after_drop_loses_and_repeats_nothing(
    make_gateway: Any, fake: FakeAnthropic
) -> None:
    client = await make_gateway(gateway_resume_grace_s=5.0)
    fake.add(Reply([Text(SLOW, chunk=5)], delay_s=0.005))
    response = await client.post("/api/stream", json={"query": "x"})
    seen: list[dict[str, Any]] = []
    async for event in iter_events(response):
        seen.append(event)
        if len(seen) == 12:
            break
    response.close()
    last = seen[-1]["seq"]
    await asyncio.sleep(0.2)  # the run goes on without a reader
    again = await client.get(
        f"/api/stream/{seen[0]['run_id']}", headers={"Last-Event-ID": str(last)}
    )
    assert again.status == 200 and again.headers["Content-Type"] == "text/event-stream"
    rest = await read_events(again)
    every = seen + rest
    assert [e["seq"] for e in every] == list(range(1, len(every) + 1))
    assert every[-1]["type"] == "final" and every[-1]["outcome"] == "completed"
    text = "".join(e["text"] for e in every if e["type"] == "delta")
    assert text == SLOW == every[-1]["result"]
    after = await client.get(f"/api/stream/{seen[0]['run_id']}?after=3")
    assert (await read_events(after))[0]["seq"] == 4


async def test_explicit_cancel(gateway: Client, fake: FakeAnthropic) -> None:
    fake.add(Reply([Text(SLOW, chunk=5)], delay_s=0.02))
    response = await gateway.post("/api/stream", json={"query": "x"})
    collected: list[dict[str, Any]] = []
    async for event in iter_events(response):
        collected.append(event)
        if event["type"] == "delta" and len(collected) == 5:
            answer = await gateway.post(f"/api/runs/{event['run_id']}/cancel")
            assert (await answer.json())["cancelled"] is True
    assert collected[-1]["type"] == "final" and collected[-1]["outcome"] == "cancelled"
    assert [e["type"] for e in collected].count("final") == 1
    await asyncio.wait_for(fake.disconnected.wait(), 2)
    again = await gateway.post(f"/api/runs/{collected[0]['run_id']}/cancel")
    assert (await again.json())["cancelled"] is False


async def test_unknown_run_is_404(gateway: Client) -> None:
    for response in (
        await gateway.get("/api/stream/run_nope"),
        await gateway.post("/api/runs/run_nope/cancel"),
    ):
        assert response.status == 404
        assert (await response.json())["error"]["code"] == "NOT_FOUND"


async def test_research_equals_the_fold_of_the_stream(gateway: Client, fake: FakeAnthropic) -> None:
    script = [
        Reply([Text("Looking."), ToolUse("echo", {"text": "a"}), ToolUse("fail", {})]),
        Reply([Text("Answer: a.")], cache_creation=3),
    ]
    fake.add(*script)
    streamed = await stream(gateway, query="q")
    fake.add(*script)
    response = await gateway.post("/api/research", json={"query": "q"})
    assert response.status == 200
    body = await response.json()
    folded = fold(streamed)
    volatile = ("run_id", "session_id", "duration_ms", "toolCalls", "trace_id")
    assert {k: v for k, v in body.items() if k not in volatile} == {
        k: v for k, v in folded.items() if k not in volatile
    }
    assert body["text"] == "Looking.\n\nAnswer: a." and body["outcome"] == "completed"
    calls = body["toolCalls"]
    assert [(c["name"], c["result"]["is_error"]) for c in calls] == [
        ("echo", False),
        ("fail", True),
    ]
    assert calls[0]["input"] == {"text": "a"} and calls[0]["result"]["content"] == "echo: a"
    assert [c["name"] for c in folded["toolCalls"]] == ["echo", "fail"]
    assert body["usage"]["cache_creation_input_tokens"] == 3 and body["turns"] == 2


async def test_research_upstream_failure_is_an_error_status(
    gateway: Client, fake: FakeAnthropic
) -> None:
    fake.add(Reply(status=401, error_type="authentication_error"))
    response = await gateway.post("/api/research", json={"query": "q"})
    assert response.status == 401
    assert (await response.json())["error"]["code"] == "AUTHENTICATION_ERROR"


async def test_session_continues_the_conversation(gateway: Client, fake: FakeAnthropic) -> None:
    fake.add(Reply([Text("First answer.")]), Reply([Text("Second answer.")]))
    first = await stream(gateway, query="one", sessionId="sess-1")
    assert first[-1]["session_id"] == "sess-1"
    await stream(gateway, query="two", sessionId="sess-1")
    assert unmarked(fake.requests[1]["messages"]) == [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": [{"type": "text", "text": "First answer."}]},
        {"role": "user", "content": [{"type": "text", "text": "two"}]},  # the breakpoint's form
    ]


async def test_heartbeat_while_tools_run(make_gateway: Any, fake: FakeAnthropic) -> None:
    client = await make_gateway(gateway_heartbeat_s=0.1)
    fake.add(Reply([ToolUse("sleep", {"seconds": 0.5})]), Reply([Text("ok")]))
    response = await client.post("/api/stream", json={"query": "x"})
    body = await response.read()
    assert body.count(b": ping\n\n") >= 2
    assert body.endswith(b"\n\n") and b'"type":"final"' in body.split(b"\n\n")[-2]


async def test_cancel_mid_text_keeps_the_partial_answer(
    gateway: Client, fake: FakeAnthropic
) -> None:
    fake.add(Reply([Text("Already said. "), ToolUse("echo", {"text": "a"})]))
    fake.add(Reply([Text(SLOW, chunk=5)], delay_s=0.02))
    response = await gateway.post("/api/stream", json={"query": "x"})
    seen: list[dict[str, Any]] = []
    async for event in iter_events(response):
        seen.append(event)
        if event["type"] == "delta" and event.get("text") == "word ":
            await gateway.post(f"/api/runs/{event['run_id']}/cancel")
    second_turn = [i for i, e in enumerate(seen) if e["type"] == "turn_start"][1]
    streamed = [e["text"] for e in seen[second_turn:] if e["type"] == "delta"]
    final = seen[-1]
    assert final["outcome"] == "cancelled" and streamed
    assert streamed[0] == "\n\n"  # the gap between the turns' texts, streamed too
    assert final["result"] == "Already said. " + "".join(streamed)
    assert final["result"] == "".join(e["text"] for e in seen if e["type"] == "delta")
