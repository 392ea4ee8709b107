"""A batch's `succeeded` Message as the stream a live call would have carried: each payload
is an event the SDK's types take, the SDK's own accumulator builds the Message back from
them, and the gateway's translator gives the history, usage and events a stream gives."""

from __future__ import annotations

from typing import Any

import httpx2
import orjson
import pydantic
from anthropic.lib.streaming._beta_messages import accumulate_event
from anthropic.types.beta import BetaMessage, BetaRawMessageStreamEvent

from gateway import pricing
from gateway.batches.messages import message_payloads
from gateway.events import Event
from gateway.providers.anthropic.stream import TurnTranslator

EVENTS: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(BetaRawMessageStreamEvent)
CITATION = {"type": "char_location", "cited_text": "Revenue was $35.1B", "document_index": 0,
            "document_title": "10-Q", "start_char_index": 10, "end_char_index": 28,
            "file_id": None}  # fmt: skip
CLEARED = {"type": "clear_tool_uses_20250919", "cleared_input_tokens": 1200,
           "cleared_tool_uses": 2}  # fmt: skip


def message(**overrides: Any) -> dict[str, Any]:
    """A Message of every block kind a turn of the gateway can hold."""
    body: dict[str, Any] = {
        "id": "msg_batch01", "type": "message", "role": "assistant", "model": "claude-test-model",
        "content": [
            {"type": "compaction", "content": "Earlier: the user asked about NVIDIA."},
            {"type": "thinking", "thinking": "Find the filing.", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
             "input": {"query": "NVIDIA 10-Q"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
                {"type": "web_search_result", "url": "https://example.com/q", "title": "Q",
                 "encrypted_content": "enc", "page_age": None}]},
            {"type": "text", "text": "Revenue was $35.1B.", "citations": [CITATION, CITATION]},
            {"type": "text", "text": "Checking the XBRL facts."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_sec_facts",
             "input": {"ticker": "NVDA", "concepts": ["Revenues"], "n": 2}},
        ],
        "stop_reason": "tool_use", "stop_sequence": None,
        "context_management": {"applied_edits": [CLEARED]},
        "usage": {"input_tokens": 900, "output_tokens": 120, "cache_read_input_tokens": 300,
                  "cache_creation_input_tokens": 0},
    }  # fmt: skip
    body.update(overrides)
    return body


def accumulated(payloads: list[bytes]) -> dict[str, Any]:
    """The Message the SDK's stream accumulator builds from the payloads (each validated
    against the SDK's stream event types first)."""
    snapshot: Any = None
    for payload in payloads:
        event = EVENTS.validate_python(orjson.loads(payload))
        snapshot = accumulate_event(
            event=event, current_snapshot=snapshot, json_bufs={}, request_headers=httpx2.Headers()
        )
    assert isinstance(snapshot, BetaMessage)
    return snapshot.to_dict(exclude_none=True)


def test_the_sdk_builds_the_same_message_from_the_payloads() -> None:
    original = message()
    payloads = message_payloads(original)
    kinds = [orjson.loads(p)["type"] for p in payloads]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    billed = {**original, "usage": {**original["usage"], "service_tier": "batch"}}
    expected = BetaMessage.model_validate(billed).to_dict(exclude_none=True)
    assert accumulated(payloads) == expected


def test_blocks_start_empty_and_each_comes_in_one_delta_as_the_stream_sends_it() -> None:
    raw = [orjson.loads(p) for p in message_payloads(message())]
    start, *blocks, delta, stop = raw
    assert start["message"]["content"] == []
    assert start["message"]["stop_reason"] is None and start["message"]["stop_sequence"] is None
    assert stop == {"type": "message_stop"}
    by_index: dict[int, list[dict[str, Any]]] = {}
    for event in blocks:
        by_index.setdefault(event["index"], []).append(event)
    assert sorted(by_index) == list(range(8))
    shapes = {}
    for index, events in by_index.items():
        first, *deltas, last = events
        assert first["type"] == "content_block_start"
        assert last == {"type": "content_block_stop", "index": index}
        assert all(d["type"] == "content_block_delta" for d in deltas)
        shapes[index] = (first["content_block"], [d["delta"] for d in deltas])
    summary = message()["content"][0]["content"]
    assert shapes[0] == ({"type": "compaction", "content": None},
                         [{"type": "compaction_delta", "content": summary}])  # fmt: skip
    assert shapes[1] == ({"type": "thinking", "thinking": "", "signature": ""}, [
        {"type": "thinking_delta", "thinking": "Find the filing."},
        {"type": "signature_delta", "signature": "sig-1"},
    ])  # fmt: skip
    assert shapes[2] == ({"type": "redacted_thinking", "data": "opaque"}, [])
    assert shapes[3][0]["input"] == {} and shapes[3][1] == [
        {"type": "input_json_delta", "partial_json": '{"query":"NVIDIA 10-Q"}'}
    ]
    assert shapes[4] == (message()["content"][4], [])  # a server tool's result comes whole
    assert shapes[5] == ({"type": "text", "text": ""}, [
        {"type": "citations_delta", "citation": CITATION},
        {"type": "citations_delta", "citation": CITATION},
        {"type": "text_delta", "text": "Revenue was $35.1B."},
    ])  # fmt: skip
    assert shapes[6][1] == [{"type": "text_delta", "text": "Checking the XBRL facts."}]
    assert shapes[7][0] == {"type": "tool_use", "id": "toolu_1", "name": "get_sec_facts",
                            "input": {}}  # fmt: skip
    assert delta == {
        "type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
        "usage": {**message()["usage"], "service_tier": "batch"},
        "context_management": {"applied_edits": [CLEARED]},
    }  # fmt: skip


def test_the_translator_gives_what_a_live_call_gives() -> None:
    original = message()
    turn = TurnTranslator(3)
    said: list[Event] = []
    turn.feed_payloads(message_payloads(original), said)
    turn.finish()
    assert turn.content == original["content"]  # the history, back to the API verbatim
    assert turn.message_id == "msg_batch01" and turn.model == "claude-test-model"
    assert turn.stop_reason == "tool_use"
    assert turn.usage == {"input_tokens": 900, "output_tokens": 120, "cache_read_input_tokens": 300,
                          "cache_creation_input_tokens": 0, pricing.BATCH_KEY: 1}  # fmt: skip
    assert [t["input"] for t in turn.tool_uses] == [original["content"][7]["input"]]
    assert turn.texts == ["Revenue was $35.1B.", "Checking the XBRL facts."]
    kinds = [(e["type"], e.get("phase")) for e in said]
    assert kinds == [
        ("thinking_start", None), ("thinking", None), ("thinking_signature", None),
        ("thinking_complete", None),
        ("tool_call", "tool_start"), ("tool_call", "tool_input_delta"), ("tool_call", "tool_use"),
        ("tool_call", "tool_result"),
        ("citation", None), ("citation", None), ("delta", None), ("delta", None),
        ("tool_call", "tool_start"), ("tool_call", "tool_input_delta"), ("tool_call", "tool_use"),
        ("context_edited", None),
    ]  # fmt: skip


def test_the_tier_is_the_batch_tier_whatever_the_body_says() -> None:
    for usage in ({"input_tokens": 5, "output_tokens": 1},
                  {"input_tokens": 5, "output_tokens": 1, "service_tier": "standard"}):  # fmt: skip
        bare: dict[str, Any] = {"id": "msg_2", "type": "message", "role": "assistant",
                                "model": "m", "content": [], "stop_reason": "end_turn",
                                "stop_sequence": None, "usage": usage}  # fmt: skip
        raw = [orjson.loads(p) for p in message_payloads(bare)]
        assert [r["type"] for r in raw] == ["message_start", "message_delta", "message_stop"]
        assert raw[0]["message"]["usage"]["service_tier"] == "batch"
        assert raw[1]["usage"]["service_tier"] == "batch"
        assert "context_management" not in raw[1]
        assert accumulated(message_payloads(bare))["usage"]["service_tier"] == "batch"
        turn = TurnTranslator(1)
        turn.feed_payloads(message_payloads(bare), [])
        assert turn.usage[pricing.BATCH_KEY] == 1
    # A body without usage or content (nothing the API sends, but nothing to fail on).
    empty = [orjson.loads(p) for p in message_payloads({"id": "msg_3", "stop_reason": None})]
    assert empty[0]["message"]["usage"] == {"service_tier": "batch"}
    assert [r["type"] for r in empty] == ["message_start", "message_delta", "message_stop"]


def test_a_stop_sequence_comes_with_the_stop() -> None:
    stopped = message(stop_reason="stop_sequence", stop_sequence="</answer>")
    payloads = message_payloads(stopped)
    start, delta = (orjson.loads(payloads[0]), orjson.loads(payloads[-2]))
    assert (start["message"]["stop_reason"], start["message"]["stop_sequence"]) == (None, None)
    assert delta["delta"] == {"stop_reason": "stop_sequence", "stop_sequence": "</answer>"}
    built = accumulated(payloads)
    assert (built["stop_reason"], built["stop_sequence"]) == ("stop_sequence", "</answer>")


def test_blocks_with_nothing_to_stream_still_start_and_stop() -> None:
    content = [
        {"type": "text", "text": ""},
        {"type": "tool_use", "id": "toolu_2", "name": "list_tools", "input": {}},
        {"type": "thinking", "thinking": "", "signature": ""},
        {"type": "compaction", "content": None},
    ]
    raw = [orjson.loads(p) for p in message_payloads(message(content=content))]
    deltas = [r["delta"] for r in raw if r["type"] == "content_block_delta"]
    assert deltas == [
        {"type": "text_delta", "text": ""},
        {"type": "input_json_delta", "partial_json": "{}"},
        {"type": "thinking_delta", "thinking": ""},
    ]  # no signature to send, no summary to fill
    turn = TurnTranslator(1)
    turn.feed_payloads(message_payloads(message(content=content)), [])
    assert turn.content == content


def test_what_a_stream_sends_in_its_deltas_comes_in_them() -> None:
    """A compaction's `encrypted_content`, the stop's details and the container go where a
    stream sends them (the deltas), so the SDK's accumulator keeps them too."""
    compacted = {"type": "compaction", "content": "Earlier: NVIDIA.", "encrypted_content": "e1"}
    details = {"type": "refusal", "category": None, "explanation": None}
    container = {"id": "container_1", "expires_at": "2026-11-28T00:00:00Z"}
    content = [compacted, {"type": "text", "text": "No."}]
    original = message(
        content=content, stop_reason="refusal", stop_details=details, container=container
    )
    raw = [orjson.loads(p) for p in message_payloads(original)]
    assert raw[1]["content_block"] == {"type": "compaction", "content": None}
    assert raw[2]["delta"]["encrypted_content"] == "e1"
    assert raw[-2]["delta"]["stop_details"] == details
    assert raw[-2]["delta"]["container"] == container
    built = accumulated(message_payloads(original))
    assert built["content"][0] == compacted
    assert built["stop_details"]["type"] == "refusal"
    turn = TurnTranslator(1)
    turn.feed_payloads(message_payloads(original), [])
    assert turn.content[0] == compacted  # back to the API verbatim
