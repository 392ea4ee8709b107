"""The pure wire parts, and the fake checked against the SDK's own stream accumulator."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import orjson
from aiohttp.test_utils import TestServer

from gateway.events import Event
from gateway.providers.anthropic.stream import SSEDecoder, TurnTranslator
from gateway.sse import frame, parse_frames
from tests.fakes.anthropic import (
    FakeAnthropic,
    RedactedThinking,
    Reply,
    ServerToolUse,
    Text,
    Thinking,
    ToolUse,
)

TRICKY = 'ünïcödé "quotes" and\nnewlines'
REPLY = Reply(
    [
        Thinking("Let me think about filings.", signature="sig-xyz"),
        Text("Looking up ", chunk=3),
        ToolUse("echo", {"text": TRICKY, "n": [1, 2.5, None]}, fragment=4),
        ToolUse("sleep", {"seconds": 0}, fragment=1),
    ],
    input_tokens=42, output_tokens=17, cache_read=3,
)  # fmt: skip


def wire_bytes(fake: FakeAnthropic, reply: Reply, *, compact: bool = False) -> bytes:
    """The reply's SSE bytes: compact JSON as the API writes it, or spaced, with CRLFs."""
    if compact:
        return b"".join(
            b"data: %b\n\n" % json.dumps(e, separators=(",", ":"), ensure_ascii=False).encode()
            for e in fake.events(reply)
        )
    return b"".join(
        f"event: {e['type']}\r\ndata: {json.dumps(e)}\r\n\r\n".encode() for e in fake.events(reply)
    )


def translate(data: bytes, chunk: int) -> tuple[TurnTranslator, list[dict[str, Any]]]:
    """Decode and translate as the gateway does; events come back as the client sees them."""
    decoder, turn, out = SSEDecoder(), TurnTranslator(1), []
    for i in range(0, len(data), chunk):
        for payload in decoder.feed(data[i : i + chunk]):
            event = turn.feed_payload(payload)
            if event is not None:
                out.append(orjson.loads(orjson.dumps(event)))
    turn.finish()
    return turn, out


async def sdk_final_message(
    fake_server: TestServer, fake: FakeAnthropic, reply: Reply
) -> tuple[Any, list[dict[str, Any]]]:
    """The SDK's own accumulation of `reply` from the fake (the oracle), and its content."""
    fake.add(reply)
    client = anthropic.AsyncAnthropic(
        api_key="k", base_url=str(fake_server.make_url("")).rstrip("/"), max_retries=0
    )
    async with client.messages.stream(
        model="claude-test-model", max_tokens=100, messages=[{"role": "user", "content": "x"}]
    ) as sdk_stream:
        message = await sdk_stream.get_final_message()
    await client.close()
    return message, [block.model_dump(exclude_none=True) for block in message.content]


async def test_fake_and_translator_agree_with_the_sdk(
    fake_server: TestServer, fake: FakeAnthropic
) -> None:
    message, expected = await sdk_final_message(fake_server, fake, REPLY)
    turn, _ = translate(wire_bytes(FakeAnthropic(), REPLY), chunk=7)
    assert turn.content == expected
    assert message.stop_reason == turn.stop_reason == "tool_use"
    assert message.usage.input_tokens == turn.usage["input_tokens"] == 42
    assert message.usage.output_tokens == turn.usage["output_tokens"] == 17
    assert message.usage.cache_read_input_tokens == turn.usage["cache_read_input_tokens"] == 3


def test_decoder_handles_every_chunk_boundary() -> None:
    data = wire_bytes(FakeAnthropic(), REPLY)
    reference_turn, reference = translate(data, chunk=len(data))
    for compact in (False, True):
        data = wire_bytes(FakeAnthropic(), REPLY, compact=compact)
        for chunk in (1, 2, 3, 5, 64):
            turn, events = translate(data, chunk)
            assert events == reference and turn.content == reference_turn.content
            assert turn.tool_uses[0]["input"]["text"] == TRICKY


def test_text_with_quotes_and_escapes_in_both_forms() -> None:
    """Quotes, escapes and non-ASCII text survive compact and spaced upstream JSON alike."""
    pieces = ["plain ", 'a "quoted" word ', "back\\slash\\", " tab\t and é ", "\\", "emoji 😀 "]
    reply = Reply([Text("".join(pieces), chunk=3), Text("second block")])
    expected = "".join(pieces)
    for compact in (True, False):
        turn, events = translate(wire_bytes(FakeAnthropic(), reply, compact=compact), chunk=7)
        assert (
            "".join(e["text"] for e in events if e["type"] == "delta") == expected + "second block"
        )
        assert turn.content[0]["text"] == expected and turn.texts == [expected, "second block"]


def test_long_blocks_read_in_batches_are_packed_and_whole() -> None:
    """The gateway's own path (`feed_payloads`, a list per read): thousands of fragments
    give the same content, events and partial text as one at a time, while an open block
    holds a few strings, not one per fragment."""
    text = "".join(f"w{i} " for i in range(3000))
    tool_input = {"rows": [{"n": i, "s": 'é"q'} for i in range(400)]}
    reply = Reply(
        [Thinking("t" * 900, chunk=3), Text(text, chunk=2), ToolUse("echo", tool_input, fragment=3)]
    )
    data = wire_bytes(FakeAnthropic(), reply, compact=True)
    reference_turn, reference = translate(data, chunk=len(data))
    for chunk in (97, 4096, len(data)):
        decoder, turn, out = SSEDecoder(), TurnTranslator(1), []
        most_strings = 0
        for i in range(0, len(data), chunk):
            batch: list[Event] = []
            turn.feed_payloads(decoder.feed(data[i : i + chunk]), batch)
            out += [orjson.loads(orjson.dumps(event)) for event in batch]
            most_strings = max([most_strings, *(len(p) for p in turn._parts.values())])
            if len(out) == 2000:
                assert turn.partial_texts()[-1] == text[: len(turn.partial_texts()[-1])]
        turn.finish()
        assert out == reference and turn.content == reference_turn.content
        assert turn.tool_uses[0]["input"] == tool_input and turn.texts == [text]
        if chunk == 97:  # about a fragment a read: a string per PACK_AFTER (32) fragments
            assert most_strings < len(reference) / 16


def test_decoder_joins_multiline_data_and_skips_comments() -> None:
    decoder = SSEDecoder()
    payloads = decoder.feed(b': keepalive\n\nevent: x\ndata: {"a":\ndata: 1}\n\ndata:{"b":2}\n\n')
    assert [orjson.loads(p) for p in payloads] == [{"a": 1}, {"b": 2}]


def test_empty_tool_input_is_an_empty_object() -> None:
    turn = TurnTranslator(1)
    block = {"type": "tool_use", "id": "t1", "name": "echo", "input": {}}
    turn.feed({"type": "content_block_start", "index": 0, "content_block": block})
    event = turn.feed({"type": "content_block_stop", "index": 0})
    assert event is not None and event["type"] == "tool_call"
    assert event["tool"]["input"] == {} and not turn.input_errors


def test_frames_round_trip() -> None:
    event = {
        "type": "delta",
        "text": "line one\nline two\r\n: not a comment",
        "run_id": "r",
        "seq": 7,
    }
    data = frame(7, event)
    assert data.count(b"\n") == 3 and data.startswith(b"id: 7\ndata: {")
    assert parse_frames(b": ping\n\n" + data) == [event]


SEARCH_RESULTS = [
    {"type": "web_search_result", "url": "https://example.com/nvda", "title": "NVIDIA results",
     "encrypted_content": "EqgfCioIARgBIiQ3YTAw", "page_age": "2 days ago"},
]  # fmt: skip
CITATION = {
    "type": "web_search_result_location", "url": "https://example.com/nvda",
    "title": "NVIDIA results", "encrypted_index": "Eo8BCioIAhgB", "cited_text": "Revenue rose",
}  # fmt: skip
SERVER_REPLY = Reply(
    [
        RedactedThinking(),
        ServerToolUse("web_search", {"query": "nvidia revenue 2026"}, SEARCH_RESULTS),
        Text("Revenue rose sharply.", citations=[CITATION]),
    ],
    stop_reason="end_turn",
)


async def test_server_tools_citations_and_redacted_thinking_agree_with_the_sdk(
    fake_server: TestServer, fake: FakeAnthropic
) -> None:
    _, expected = await sdk_final_message(fake_server, fake, SERVER_REPLY)
    turn, events = translate(wire_bytes(FakeAnthropic(), SERVER_REPLY), chunk=5)
    assert turn.content == expected  # back to the API verbatim: input and result included
    assert turn.content[1]["input"] == {"query": "nvidia revenue 2026"}
    assert turn.tool_uses == []  # the API ran it; nothing for the gateway to run
    server = [e for e in events if e["type"] == "tool_call"]
    assert [e["phase"] for e in server][:1] + [e["phase"] for e in server][-2:] == [
        "tool_start", "tool_use", "tool_result"
    ]  # fmt: skip
    assert all(e["server"] is True for e in server)
    result = server[-1]
    assert result["tool"] == {"id": "srvtoolu_01fake", "name": "web_search"}
    assert "encrypted_content" not in result["preview"] and "NVIDIA results" in result["preview"]
    assert [e["citation"] for e in events if e["type"] == "citation"] == [CITATION]


def test_a_failed_server_tool_is_a_tool_error() -> None:
    error = {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}
    reply = Reply([ServerToolUse("web_search", {"query": "q"}, error), Text("none")])
    _, events = translate(wire_bytes(FakeAnthropic(), reply), chunk=9)
    [failed] = [e for e in events if e.get("phase") == "tool_error"]
    assert failed["server"] is True and "max_uses_exceeded" in failed["error"]
