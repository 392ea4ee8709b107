"""The demo app as a Messages API server: the real SDK is the judge of its wire format."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import orjson
import pytest
from aiohttp import ClientSession
from pytest_aiohttp import AiohttpServer

from demo_model import create_demo_app
from tools import all_tools
from tools.registry import ToolRegistry

TOOLS = ToolRegistry(all_tools()).definitions()
MODEL = "claude-demo"


def request(question: str, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": question}],
        "tools": TOOLS,
    }
    body.update(extra)
    return body


@pytest.fixture
async def sdk(demo_server_url: str) -> AsyncIterator[anthropic.AsyncAnthropic]:
    client = anthropic.AsyncAnthropic(api_key="demo", base_url=demo_server_url, max_retries=0)
    yield client
    await client.close()


async def raw_events(url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    body = {**body, "stream": True}
    async with ClientSession() as session, session.post(f"{url}/v1/messages", json=body) as r:
        assert r.status == 200 and r.headers["Content-Type"].startswith("text/event-stream")
        data = await r.read()
    events = []
    for block in data.decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in lines:
            event = orjson.loads(lines["data"])
            assert lines["event"] == event["type"]
            events.append(event)
    return events


@pytest.mark.parametrize(
    ("question", "thinking"),
    [
        ("Find Tesla's 10-K filings since 2020", False),
        ("What's a good recipe for pancakes?", False),
        ("Find Tesla's 10-K filings since 2020", True),
    ],
)
async def test_stream_rebuilds_the_same_message(
    sdk: anthropic.AsyncAnthropic, question: str, thinking: bool
) -> None:
    body = request(question)
    if thinking:
        body["thinking"] = {"type": "enabled", "budget_tokens": 1024}
    async with sdk.messages.stream(**body) as stream:
        streamed = await stream.get_final_message()
    created = await sdk.messages.create(**body)
    assert streamed.model_dump() == created.model_dump()
    if thinking:
        think = streamed.content.pop(0)
        assert think.type == "thinking" and think.signature.startswith("sig_demo")
        assert "Companies: Tesla (TSLA, CIK 1318605)." in think.thinking
    assert streamed.content[0].type == "text" and streamed.usage.output_tokens > 1
    if streamed.stop_reason == "tool_use":
        [use] = [b for b in streamed.content if b.type == "tool_use"]
        assert use.name == "search_sec_company_tickers" and use.input == {"search_term": "Tesla"}
    else:
        assert streamed.stop_reason == "end_turn" and len(streamed.content) == 1


async def test_event_sequence(demo_server_url: str) -> None:
    body = request("Compare revenue of Apple and NVIDIA")
    events = await raw_events(demo_server_url, body)
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["message_start", "ping"] and kinds[-2:] == [
        "message_delta",
        "message_stop",
    ]
    start = events[0]["message"]
    assert start["content"] == [] and start["stop_reason"] is None and start["role"] == "assistant"
    assert start["usage"]["input_tokens"] == len(orjson.dumps(body)) // 4  # ~4 chars a token
    blocks = [e for e in events if e["type"] == "content_block_start"]
    assert [b["content_block"]["type"] for b in blocks] == ["text", "tool_use", "tool_use"]
    texts = [
        e["delta"]["text"] for e in events
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta"
    ]  # fmt: skip
    assert len(texts) > 3 and all(len(t.split()) <= 3 for t in texts)
    for block in blocks[1:]:
        index = block["index"]
        parts = [
            e["delta"]["partial_json"] for e in events
            if e["type"] == "content_block_delta" and e["index"] == index
        ]  # fmt: skip
        assert parts[0] == "" and len(parts) > 2
        assert orjson.loads("".join(parts))["concept"] == "revenue"
    assert events[-2]["delta"]["stop_reason"] == "tool_use"
    assert events[-2]["usage"]["output_tokens"] > 10


async def test_same_conversation_same_reply(demo_server_url: str) -> None:
    body = request("How has NVIDIA's revenue grown?")
    assert await raw_events(demo_server_url, body) == await raw_events(demo_server_url, body)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"messages": None}, "messages"),
        ({"messages": []}, "messages"),
        ({"max_tokens": None}, "max_tokens"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"model": None}, "model"),
        ({"messages": [{"role": "assistant", "content": "hi"}]}, "first message"),
    ],
)
async def test_invalid_requests(demo_server_url: str, change: dict[str, Any], message: str) -> None:
    body = {k: v for k, v in {**request("hi"), **change}.items() if v is not None}
    async with ClientSession() as session:
        async with session.post(f"{demo_server_url}/v1/messages", json=body) as response:
            assert response.status == 400
            error = await response.json()
        async with session.post(f"{demo_server_url}/v1/messages", data=b"{nope") as response:
            assert response.status == 400
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert message in error["error"]["message"]


async def test_sdk_raises_bad_request(sdk: anthropic.AsyncAnthropic) -> None:
    with pytest.raises(anthropic.BadRequestError):
        await sdk.messages.create(model=MODEL, max_tokens=100, messages=[])


async def test_max_tokens_cuts_the_answer(sdk: anthropic.AsyncAnthropic) -> None:
    message = await sdk.messages.create(**request("Tell me a joke", max_tokens=20))
    assert message.stop_reason == "max_tokens"
    assert message.content[0].type == "text" and len(message.content[0].text) == 80


async def test_tool_choice_none_answers_in_text(sdk: anthropic.AsyncAnthropic) -> None:
    message = await sdk.messages.create(
        **request("How has NVIDIA's revenue grown?", tool_choice={"type": "none"})
    )
    assert message.stop_reason == "end_turn"
    assert [b.type for b in message.content] == ["text"]


async def test_only_offered_tools_are_used(sdk: anthropic.AsyncAnthropic) -> None:
    offered = [t for t in TOOLS if t["name"] in ("search_sec_filings", "get_sec_filing")]
    message = await sdk.messages.create(**request("What are Apple's risk factors?", tools=offered))
    uses = [b for b in message.content if b.type == "tool_use"]
    assert [u.name for u in uses] == ["search_sec_filings"]  # no lookup tool: go by ticker
    assert uses[0].input["company_identifier"] == "AAPL"
    none = await sdk.messages.create(**request("What are Apple's risk factors?", tools=[]))
    assert none.stop_reason == "end_turn" and "not available" in none.content[0].text


async def test_stream_is_paced(aiohttp_server: AiohttpServer) -> None:
    server = await aiohttp_server(create_demo_app(delay_s=0.01))
    url = str(server.make_url("")).rstrip("/")
    started = time.monotonic()
    events = await raw_events(url, request("What's a good recipe for pancakes?"))
    deltas = sum(e["type"] == "content_block_delta" for e in events)
    assert time.monotonic() - started >= deltas * 0.01 * 0.9


async def test_a_bug_is_an_api_error(
    sdk: anthropic.AsyncAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise ZeroDivisionError

    monkeypatch.setattr("demo_model.server.respond", broken)
    with pytest.raises(anthropic.InternalServerError) as raised:
        await sdk.messages.create(**request("What is the CIK of Marvell?"))
    assert raised.value.body == {
        "type": "error",
        "error": {"type": "api_error", "message": "The demo model failed on this request."},
    }


async def test_models_api_describes_the_demo(sdk: anthropic.AsyncAnthropic) -> None:
    info = await sdk.models.retrieve("demo")
    assert (info.type, info.id, info.lifecycle) == ("model", "demo", "active")
    assert info.display_name == "Demo research model (offline)"
    assert (info.max_input_tokens, info.max_tokens) == (200_000, 64_000)
    assert info.created_at.year >= 2025 and info.deprecated_at is None
    caps = info.capabilities
    assert caps is not None
    types = caps.thinking.types
    assert caps.thinking.supported and types.adaptive.supported and types.enabled.supported
    assert types.disabled.supported and not types.between_tools.supported
    effort = caps.effort
    assert effort.supported and effort.low.supported and effort.medium.supported
    assert effort.high.supported and not effort.max.supported
    assert not caps.structured_outputs.supported and not caps.citations.supported
    assert not caps.server_tools.supported
    # Every capability key is present, as the API promises ("Keys are always present").
    raw = caps.model_dump()
    assert set(raw) == set(type(caps).model_fields) and all(v is not None for v in raw.values())


async def test_models_api_knows_no_other_model(sdk: anthropic.AsyncAnthropic) -> None:
    with pytest.raises(anthropic.NotFoundError) as raised:
        await sdk.models.retrieve("claude-sonnet-4-5-20250929")
    assert raised.value.body == {
        "type": "error",
        "error": {"type": "not_found_error", "message": "model: claude-sonnet-4-5-20250929"},
    }


def todays_request(question: str, **extra: Any) -> dict[str, Any]:
    """A request as the gateway sends it today: system blocks, cache breakpoints, effort."""
    cached = {"cache_control": {"type": "ephemeral"}}
    tools = [dict(t) for t in TOOLS]
    tools[-1] = {**tools[-1], **cached}
    body = request(question, tools=tools, output_config={"effort": "medium"})
    body["system"] = [
        {"type": "text", "text": "You research public companies.", **cached},
        {"type": "text", "text": "Today's date is 2026-03-10."},
    ]
    body["messages"] = [{"role": "user", "content": [{"type": "text", "text": question, **cached}]}]
    body.update(extra)
    return body


async def test_accepts_todays_request_forms(sdk: anthropic.AsyncAnthropic) -> None:
    body = todays_request("What has Marvell filed recently?", thinking={"type": "adaptive"})
    async with sdk.messages.stream(**body) as stream:
        message = await stream.get_final_message()
    assert message.model == "demo"
    assert [b.type for b in message.content] == ["thinking", "text", "tool_use"]
    quiet = await sdk.messages.create(**{**body, "thinking": {"type": "disabled"}})
    assert quiet.model == "demo" and [b.type for b in quiet.content] == ["text", "tool_use"]


async def test_message_start_names_the_demo(demo_server_url: str) -> None:
    events = await raw_events(demo_server_url, todays_request("Show Apple's EPS history"))
    assert events[0]["message"]["model"] == "demo"


async def test_structured_outputs_are_refused(sdk: anthropic.AsyncAnthropic) -> None:
    schema = {"type": "object", "properties": {"cik": {"type": "string"}}}
    body = todays_request("What is the CIK of Marvell?")
    body["output_config"] = {"effort": "low", "format": {"type": "json_schema", "schema": schema}}
    with pytest.raises(anthropic.BadRequestError) as raised:
        await sdk.messages.create(**body)
    error = raised.value.body
    assert isinstance(error, dict) and error["error"]["type"] == "invalid_request_error"
    assert "output_config.format" in error["error"]["message"]


async def test_a_note_after_tool_results_is_not_a_question(sdk: anthropic.AsyncAnthropic) -> None:
    body = todays_request("Find Tesla's 10-K filings since 2020")
    first = await sdk.messages.create(**body)
    [use] = [b for b in first.content if b.type == "tool_use"]
    lookup = {"matches": [{"ticker": "TSLA", "name": "Tesla, Inc.", "cik": 1318605}]}
    found = orjson.dumps(lookup).decode()
    body["messages"] += [
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": use.id, "content": found},
            {"type": "text", "text": "Tool round 1 of 10 is done; 9 rounds remain."},
        ]},
    ]  # fmt: skip
    second = await sdk.messages.create(**body)
    [listing] = [b for b in second.content if b.type == "tool_use"]
    assert listing.name == "search_sec_filings"
    assert listing.input["company_identifier"] == "1318605"
    assert listing.input["date_after"] == "2020-01-01"


async def test_reads_the_date_from_the_second_system_block(sdk: anthropic.AsyncAnthropic) -> None:
    body = todays_request("Find Tesla's 10-K filings of the last 3 years", tools=[
        t for t in TOOLS if t["name"] == "search_sec_filings"
    ])  # fmt: skip
    message = await sdk.messages.create(**body)
    [use] = [b for b in message.content if b.type == "tool_use"]
    assert use.input["date_after"] == "2023-03-10"
