"""Research that outlasts the context window: a run whose tool results add up to more than
the model's window completes, by server-side compaction, by context editing, or by the
gateway's own clearing on an upstream without either, and its session goes on with the
next question. The fakes count the prompt and refuse one over the window, as the APIs do."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer
from pytest_aiohttp import AiohttpServer

from gateway.context import CLEARED, clear_old_tool_results
from gateway.providers.anthropic.stream import TurnTranslator
from tests.conftest import GatewayFactory, stream
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, ToolUse
from tests.fakes.models import model_info
from tests.fakes.openai import Call, FakeOpenAI
from tests.fakes.openai import Reply as OReply
from tests.fakes.tools import Big, Echo
from tools.registry import ToolRegistry

Client = TestClient[Any, Any]
WINDOW = 120_000
RESULT_CHARS = 100_000  # about 25,000 tokens a result
ROUNDS = 8  # 8 results: about 200,000 tokens, well over the window


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry([Echo(), Big()], timeout_s=5.0, max_result_chars=RESULT_CHARS)


@pytest.fixture
def fake() -> FakeAnthropic:
    fake = FakeAnthropic(count_tokens=True)
    fake.models["claude-small"] = model_info("claude-small", max_input_tokens=WINDOW)
    fake.models["claude-edits"] = model_info(
        "claude-edits", max_input_tokens=WINDOW, compaction=False
    )
    fake.models["claude-plain"] = model_info(
        "claude-plain", max_input_tokens=WINDOW, compaction=False, editing=False
    )
    return fake


def long_research(fake: FakeAnthropic, answer: str = "Done.") -> None:
    for n in range(ROUNDS):
        fake.add(Reply([Text(f"Reading part {n}."), ToolUse("big", {"size": RESULT_CHARS + n})]))
    fake.add(Reply([Text(answer)]))


def edited(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "context_edited"]


async def gateway(make_gateway: GatewayFactory, model: str, **settings: Any) -> Client:
    return await make_gateway(
        sdk_model=model, sdk_max_turns=ROUNDS + 2, gateway_context_trigger_tokens=60_000,
        gateway_prompt_cache=False, **settings,
    )  # fmt: skip


async def test_without_context_management_the_window_ends_the_run(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await gateway(make_gateway, "claude-small", gateway_context="off")
    long_research(fake)
    events = await stream(client, query="read the whole filing")
    assert events[-1]["type"] == "error"
    assert "prompt is too long" in events[-1]["error"]["message"]
    assert "context_management" not in fake.requests[0]


async def test_compaction_carries_a_long_run_and_its_session(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await gateway(make_gateway, "claude-small")
    long_research(fake)
    events = await stream(client, query="read the whole filing")
    final = events[-1]
    assert final["type"] == "final" and final["outcome"] == "completed", final
    assert final["result"].endswith("Done.")
    compactions = edited(events)
    assert compactions and {e["strategy"] for e in compactions} == {"compact"}
    first = fake.requests[0]
    assert first["context_management"] == {
        "edits": [
            {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 60_000}}
        ]
    }
    assert "compact-2026-01-12" in fake.headers[0]["anthropic-beta"]
    # The compaction block went back exactly as it came, at the start of its turn's content.
    blocks = [
        b
        for request in fake.requests[1:]
        for m in request["messages"]
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "compaction"
    ]
    assert blocks and all(set(b) == {"type", "content"} for b in blocks)
    assert blocks[0]["content"].startswith("Summary of the")
    # Compaction's own tokens are billed: counted in the turn and the run's totals.
    turns = [e for e in events if e["type"] == "turn_complete"]
    compacted = compactions[0]
    own = compacted["usage"]["input_tokens"] + compacted["usage"]["output_tokens"]
    turn = next(t for t in turns if t["turn"] == compacted["turn"])
    assert turn["usage"]["input_tokens"] >= compacted["usage"]["input_tokens"]
    assert final["usage"]["input_tokens"] == sum(t["usage"]["input_tokens"] for t in turns)
    assert own > 50_000  # it read the context it closed
    # The session goes on: the next question's history holds the compaction block.
    fake.add(Reply([Text("And the next answer.")]))
    more = await stream(client, query="and then?", sessionId=final["session_id"])
    assert more[-1]["type"] == "final" and more[-1]["outcome"] == "completed"
    history = fake.requests[-1]["messages"]
    assert any(b.get("type") == "compaction" for m in history if isinstance(m["content"], list)
               for b in m["content"])  # fmt: skip
    assert fake.applied[-1].body["messages"][0]["content"][0]["type"] == "compaction"


async def test_context_editing_where_the_model_has_no_compaction(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await gateway(make_gateway, "claude-edits")
    long_research(fake)
    events = await stream(client, query="read the whole filing")
    final = events[-1]
    assert final["type"] == "final" and final["outcome"] == "completed", final
    clears = edited(events)
    assert clears and {e["strategy"] for e in clears} == {"clear_tool_uses"}
    assert all(e["cleared_tool_uses"] > 0 and e["cleared_input_tokens"] > 20_000 for e in clears)
    edit = fake.requests[0]["context_management"]["edits"][0]
    assert edit["type"] == "clear_tool_uses_20250919" and edit["keep"]["value"] == 3
    assert fake.headers[0]["anthropic-beta"] == "context-management-2025-06-27"
    fake.add(Reply([Text("Next.")]))
    more = await stream(client, query="and then?", sessionId=final["session_id"])
    assert more[-1]["type"] == "final" and more[-1]["outcome"] == "completed"


async def test_the_gateway_clears_old_results_for_a_model_without_either(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await gateway(make_gateway, "claude-plain")
    long_research(fake)
    events = await stream(client, query="read the whole filing")
    assert events[-1]["type"] == "final" and events[-1]["outcome"] == "completed", events[-1]
    assert {e["strategy"] for e in edited(events)} == {"gateway_clear"}
    assert all("context_management" not in r for r in fake.requests)
    assert "anthropic-beta" not in fake.headers[0]


@pytest.fixture
def fake_openai() -> FakeOpenAI:
    return FakeOpenAI(context_window=WINDOW)


@pytest.fixture
async def openai_server(fake_openai: FakeOpenAI, aiohttp_server: AiohttpServer) -> TestServer:
    return await aiohttp_server(fake_openai.app())


async def test_the_gateway_clears_old_results_on_the_openai_provider(
    make_gateway: GatewayFactory, fake_openai: FakeOpenAI, openai_server: TestServer
) -> None:
    settings = {
        "openai_base_url": str(openai_server.make_url("/v1")),
        "openai_api_key": fake_openai.api_key, "openai_model": "gpt-test",
        "gateway_upstream": "openai",
    }  # fmt: skip
    for n in range(ROUNDS):
        fake_openai.add(OReply(text=f"Part {n}.", calls=[Call("big", {"size": RESULT_CHARS + n})]))
    fake_openai.add(OReply(text="Done."))
    client = await gateway(make_gateway, "claude-small", **settings)
    events = await stream(client, query="read the whole filing")
    assert events[-1]["type"] == "final" and events[-1]["outcome"] == "completed", events[-1]
    clears = edited(events)
    assert clears and all(e["strategy"] == "gateway_clear" for e in clears)
    assert not fake_openai.rejected
    fake_openai.add(OReply(text="Next."))
    more = await stream(client, query="and then?", sessionId=events[-1]["session_id"])
    assert more[-1]["type"] == "final" and more[-1]["outcome"] == "completed"
    assert not fake_openai.rejected
    # Off, the same run overflows the window: the clearing is what carried it.
    off = await gateway(make_gateway, "claude-small", **settings, gateway_context="off")
    for n in range(ROUNDS):
        fake_openai.add(OReply(text=f"Part {n}.", calls=[Call("big", {"size": RESULT_CHARS + n})]))
    fake_openai.add(OReply(text="Done."))
    failed = await stream(off, query="read the whole filing")
    assert failed[-1]["type"] == "error" and fake_openai.rejected


def test_clearing_keeps_the_newest_results_and_replaces_messages() -> None:
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "x" * 4_000}
    messages: list[dict[str, Any]] = [{"role": "user", "content": "q"}]
    for n in range(4):
        use = {"type": "tool_use", "id": f"t{n}", "name": "big", "input": {}}
        messages.append({"role": "assistant", "content": [use]})
        messages.append({"role": "user", "content": [{**result, "tool_use_id": f"t{n}"}]})
    original = messages[1 + 1]
    cleared = clear_old_tool_results(messages, keep=1)
    assert cleared.tool_uses == 3 and cleared.input_tokens > 2_900
    contents = [m["content"][0]["content"] for m in messages[2::2]]
    assert contents == [CLEARED, CLEARED, CLEARED, "x" * 4_000]
    assert original["content"][0]["content"] == "x" * 4_000  # replaced, not changed
    assert clear_old_tool_results(messages, keep=1).tool_uses == 0


async def billed_input(make_gateway: GatewayFactory, fake: FakeAnthropic, mode: str) -> int:
    client = await make_gateway(
        sdk_model="claude-test-model", sdk_max_turns=ROUNDS + 2, gateway_context=mode,
        gateway_context_trigger_tokens=60_000, gateway_prompt_cache=False,
    )  # fmt: skip
    long_research(fake)
    events = await stream(client, query="read the whole filing")
    assert events[-1]["type"] == "final" and events[-1]["outcome"] == "completed"
    usage = events[-1]["usage"]
    return int(usage["input_tokens"] + usage["cache_read_input_tokens"])


async def test_what_compaction_saves_over_a_long_run(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    """The same nine-call run on a 1M-token model, with and without compaction: input
    tokens billed, compaction's own included (bench/README reports these numbers)."""
    without = await billed_input(make_gateway, fake, "off")
    with_compaction = await billed_input(make_gateway, fake, "compact")
    print(f"input tokens billed: off {without:,}, compact {with_compaction:,}")
    assert with_compaction < 0.6 * without


async def test_edit_mode_with_thinking_clears_thinking_first(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    """`GATEWAY_CONTEXT=edit` on a model with compaction: context editing, and with thinking
    on, `clear_thinking_20251015` first (the fake refuses it anywhere else)."""
    client = await gateway(make_gateway, "claude-small", gateway_context="edit")
    fake.add(Reply([Text("Hi.")]))
    events = await stream(client, query="q", thinking="adaptive")
    assert events[-1]["type"] == "final", events[-1]
    edits = fake.requests[0]["context_management"]["edits"]
    assert [e["type"] for e in edits] == ["clear_thinking_20251015", "clear_tool_uses_20250919"]
    assert fake.headers[0]["anthropic-beta"] == "context-management-2025-06-27"


async def test_the_fake_refuses_what_the_api_refuses(
    fake: FakeAnthropic, fake_server: TestServer
) -> None:
    """Strict as the API: no beta header, a trigger under the floor, a strategy the model
    lacks, a key the SDK's edit type does not have, a compaction block without its beta."""
    base = {
        "model": "claude-plain",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "q"}],
        "stream": True,
    }
    compact = {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 60_000}}
    small = {**base, "model": "claude-small"}
    beta = "compact-2026-01-12"
    cases = [
        # without the beta, the field is unknown to the API, as to the SDK's non-beta type
        ({**base, "model": "claude-small", "context_management": {"edits": [compact]}}, "",
         "context_management"),
        ({**base, "model": "claude-small", "context_management": {"edits": [
            {**compact, "trigger": {"type": "input_tokens", "value": 1_000}}]}},
         "compact-2026-01-12", "at least"),
        ({**base, "context_management": {"edits": [compact]}}, beta, "not supported"),
        ({**small, "context_management": {"edits": [{**compact, "keep": 1}]}}, beta, "keep"),
        ({**base, "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [{"type": "compaction", "content": "s"}]},
            {"role": "user", "content": "r"}]}, "", "messages.1.content.0"),
    ]  # fmt: skip
    fake.add(*[Reply([Text("x")]) for _ in cases])  # none is used: each is refused
    async with aiohttp.ClientSession() as session:
        for body, header, words in cases:
            headers = {"anthropic-beta": header} if header else {}
            url = fake_server.make_url("/v1/messages")
            async with session.post(url, json=body, headers=headers) as answer:
                assert answer.status == 400, body
                assert words in (await answer.json())["error"]["message"]


def test_the_translator_keeps_compaction_verbatim_and_bills_its_tokens() -> None:
    raw = [
        {"type": "message_start", "message": {"id": "m", "model": "x", "usage": {
            "input_tokens": 900, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "compaction", "content": None}},
        {"type": "content_block_delta", "index": 0, "delta": {
            "type": "compaction_delta", "content": "The summary.", "encrypted_content": "E1"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
         "context_management": {"applied_edits": [{"type": "clear_thinking_20251015",
                                                    "cleared_input_tokens": 40,
                                                    "cleared_thinking_turns": 2}]},
         "usage": {"output_tokens": 7, "iterations": [
             {"type": "compaction", "input_tokens": 150_000, "output_tokens": 300,
              "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
             {"type": "message", "input_tokens": 900, "output_tokens": 7,
              "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}]}},
        {"type": "message_stop"},
    ]  # fmt: skip
    turn = TurnTranslator(3)
    out: list[Any] = []
    turn.feed_payloads([orjson.dumps(r) for r in raw], out)
    turn.finish()
    assert turn.content[0] == {
        "type": "compaction",
        "content": "The summary.",
        "encrypted_content": "E1",
    }
    assert turn.usage["input_tokens"] == 150_900 and turn.usage["output_tokens"] == 307
    assert turn.context_tokens == 907
    edits = [e for e in out if e["type"] == "context_edited"]
    assert [e["strategy"] for e in edits] == ["compact", "clear_thinking"]
    assert edits[0]["usage"]["input_tokens"] == 150_000 and edits[0]["turn"] == 3
    assert edits[1]["cleared_thinking_turns"] == 2 and edits[1]["cleared_tool_uses"] is None
